"""Training code for learners that ship trained weights (CoLLEGe's generator).

It uses `backends` only, never `benchmarks` (which measure what it trains): the
evaluation words the corpus drops and the dev files it watches come from
`backends.shared_data`, the reference vectors it aims at from `backends.reference`.
`backends` itself never imports it.
"""
