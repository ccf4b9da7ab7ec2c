"""The paper's baselines, each a Hydra stage writing predictions (contract 5) and a manifest:

    python -m baselines.frequency      # the k most common training titles for everyone
    python -m baselines.knn            # copy the nearest training encounter's titles (tfidf | medcpt | st)
    python -m baselines.clinicalbert   # multi-label BERT over the open-vocabulary titles, top 2
    python -m baselines.prompting      # zero-/few-shot LLM prompting (+ @top1/@top2 truncations)

`baselines.common` reads the audit dir and selects encounters and label titles per track for all of them.
"""
