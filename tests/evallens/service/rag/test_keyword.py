"""The BM25 keyword leg reads the words of any language, not only ASCII ones."""

from evallens.service.rag import KeywordIndex
from evallens.service.rag.keyword import tokenize

CHUNKS = [
    ("refunds-zh", "退款会在我们收到退货后的五到十个工作日内退回您的银行卡。"),
    ("shipping-zh", "标准配送需要三到五个工作日。"),
    ("sizes-de", "Die Größe des Zelts TR-4410 beträgt 2 x 3 Meter."),
    ("care-de", "Nur Handwäsche, keine Maschinenwäsche."),
]


def test_the_keyword_leg_reads_words_beyond_ascii() -> None:
    """Terms were runs of [a-z0-9]: Chinese text had none (a Chinese knowledge base had no keyword leg at
    all) and 'Größe' was indexed as 'gr' and 'e', so 'grün' matched it and 'größe' matched nothing."""
    index = KeywordIndex()
    index.build("p", CHUNKS)

    def best(query: str) -> list[str]:
        return [hit.id for hit in index.search("p", query, 4)][:1]

    assert best("退款什么时候退回银行卡？") == ["refunds-zh"]
    assert best("配送要几天") == ["shipping-zh"]
    assert best("Welche Größe hat das Zelt?") == ["sizes-de"]
    assert best("handwäsche") == ["care-de"]
    assert index.search("p", "grün", 4) == []
    assert tokenize("TR-4410 tent") == ["tr-4410", "tr", "4410", "tent"]  # ASCII terms as they were
