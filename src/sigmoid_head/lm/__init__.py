"""The frozen language model: loading it (``backbone``), whether the Hub can be reached
(``hub_access``), its dominant tokens (``dominant``), the execution profiles (``profiles``)
and the CPU's half-precision probe (``cpu_precision``)."""
