"""MIMIC-IV readers, cohort, as-of (t0 + W) filtering, section renderers, label filter, split and
explicit/implicit partition (`python -m data_prep.build`), and the synthetic MIMIC-IV-shaped cohort
generator (`python -m data_prep.synthetic`)."""
