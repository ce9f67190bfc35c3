"""The Ray side: where the cluster's dashboard is, its State API, discovery of paused workers
(polled), and legacy ``RAY_DEBUG=legacy`` pdb breakpoints read from GCS. Everything Ray
answers is outside input here: size-capped, time-limited and validated."""
