"""The Bible studies (README.md): the data, the heads, the experiments and the tables of docs/results.md."""
