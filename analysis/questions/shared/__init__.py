"""What several questions' answers share and that is not a question: the results files as the
questions read them, the run spread, the story facts, trace pairs, the nsys grid, memory
accounting, editions."""
