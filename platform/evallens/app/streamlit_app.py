"""The script ``evallens dashboard`` runs in Streamlit: the dashboard, lent the eval engine's readers.

Mining (the Cases page) reads answers with the eval engine's refusal grammar and embeds questions
with MiniLM; the dashboard may not import the eval engine, so the entry layer lends them here.
"""

from dashboard.app import run
from evals.readers import mining_readers

run(mining_readers())
