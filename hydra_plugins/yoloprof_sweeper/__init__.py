"""yoloprof's Hydra sweeper plugin (found by Hydra's plugin discovery in the `hydra_plugins`
namespace, as hydra-optuna-sweeper ships its own); the work is in yoloprof.sweep.sweeper."""
