"""Training code for learners that ship trained weights (CoLLEGe's generator).

It sits beside `backends` and `benchmarks` and may use both: the training corpus drops
the benchmarks' evaluation words, and the dev evaluation reads the benchmark files.
`backends` itself never imports it.
"""
