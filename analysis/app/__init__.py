"""The entry points and the I/O around them: ``analyze-nsys`` (``cli``), one trace analyzed
(``analyze``), every question answered across traces (``answers``), the results cache and its
engine (this process, a local pool, Dask), batches of inputs. The top floor: it may import every
other."""
