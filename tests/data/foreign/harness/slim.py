"""Drop tables the analysis never reads (call chains, OS runtime, sampling), keep every other row, VACUUM."""
import sqlite3
import sys

DROP = {"OSRT_API", "OSRT_CALLCHAINS", "SAMPLING_CALLCHAINS", "COMPOSITE_EVENTS", "CUDA_CALLCHAINS",
        "SCHED_EVENTS", "PYTHON_CALLCHAINS", "UNWIND_METHOD_TYPE"}


def main(path):
    con = sqlite3.connect(path)
    tabs = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
    for t in sorted(tabs):
        n = con.execute(f'select count(*) from "{t}"').fetchone()[0]
        drop = t in DROP or "CALLCHAIN" in t.upper()
        print(f"  {t:45s} {n:>10d} {'DROP' if drop else ''}")
        if drop:
            con.execute(f'drop table "{t}"')
    con.commit()
    con.execute("vacuum")
    con.close()


if __name__ == "__main__":
    main(sys.argv[1])
