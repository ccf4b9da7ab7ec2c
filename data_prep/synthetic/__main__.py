"""Write the synthetic MIMIC-IV-shaped cohort (see conf/synthetic.yaml and data_prep/synthetic/stage.py).

python -m data_prep.synthetic out_dir=outputs/synthetic scale=0.01 seed=0
python -m data_prep.synthetic debug=smoke out_dir=/tmp/synthetic_smoke
"""

import hydra
from omegaconf import DictConfig

from data_prep.synthetic.stage import run


# Declared here (the file Hydra sees as __main__) so that the relative config path resolves
# against this file: data_prep/synthetic/ -> ../../conf.
@hydra.main(version_base="1.3", config_path="../../conf", config_name="synthetic")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
