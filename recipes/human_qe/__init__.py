"""The human-label studies (README.md): MQM, MLQE-PE and Mu-SHROOM sets, their runs and tables."""
