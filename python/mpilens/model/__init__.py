"""Statistical performance models (seeds/004, Dominguez-Trujillo 2021).

- gev: the generalized extreme value distribution in Hosking's sign convention (the one of
  scipy.stats.genextreme), fitted by probability-weighted moments (PWM), the method of moments
  (MOM) and maximum likelihood (MLE, through scipy, for comparison).
- emma: the expected maximum of m i.i.d. draws, E[max] ~ F^-1(0.570376002^(1/m)).
- data: the calibration data of the variability model from run directories (MPILENS_INTERVALS)
  or from the BSP harness' own log.
- bootstrap: predictions of the runtime at larger scales (non-parametric, inter-node and
  intra-node parametric, hybrid) with 95 % intervals, and their accuracy against measurements.
- variability: the whole analysis behind `mpilens model variability`.
- partitioned: Algorithm 1 (effective bandwidth of partitioned sends) and a Monte-Carlo variant.
"""
