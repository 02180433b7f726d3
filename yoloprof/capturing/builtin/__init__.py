"""The built-in capture (`yoloprof run`, `yoloprof infer`, every sweep job, `yoloprof.capture`):
settings -> preflight checks -> trial contexts -> timed trials and the trace pass -> the
profile's sections -> profile.json and its row in the results store.
"""
