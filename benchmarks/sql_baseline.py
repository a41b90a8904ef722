"""What a DuckDB user writes instead of the tool: one model's default-grid accuracy, oracle and rescued/harmed counts
straight from a store's Parquet files. The bar the CLI must beat, timed as a whole process beside it (issue 37;
the same statements as given, kept here so ``cli_vs_sql.py`` runs from the repository alone):
    python benchmarks/sql_baseline.py STORE MODEL [GRID]      (GRID: comma-separated, default text..128f)"""

import sys

import duckdb

S, M = sys.argv[1], sys.argv[2]
G = sys.argv[3].split(",") if len(sys.argv) > 3 else ["text", "8f", "16f", "32f", "64f", "128f"]
con = duckdb.connect()
piv = ", ".join(f"max(correct) FILTER (WHERE config = '{c}') AS \"{c}\"" for c in G)
con.execute(f"CREATE TEMP TABLE w AS SELECT item_id, {piv} FROM read_parquet('{S}/responses/*.parquet') WHERE model = '{M}' GROUP BY item_id")  # fmt: skip
con.execute("DELETE FROM w WHERE " + " OR ".join(f'"{c}" IS NULL' for c in G))
acc = con.execute("SELECT " + ", ".join(f'avg("{c}")' for c in G) + ", avg(greatest(" + ", ".join(f'"{c}"' for c in G) + ")) FROM w").fetchone()  # fmt: skip
tr = con.execute("SELECT " + ", ".join(f'sum(CASE WHEN "{a}"=0 AND "{b}"=1 THEN 1 ELSE 0 END), sum(CASE WHEN "{a}"=1 AND "{b}"=0 THEN 1 ELSE 0 END)' for a, b in zip(G, G[1:])) + " FROM w").fetchone()  # fmt: skip
print(acc, tr)
