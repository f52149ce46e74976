"""Prompt building, admission, fingerprints and settings: no model needed."""

import asyncio
import json
import os
import stat
import tempfile
import uuid
from pathlib import Path

import pytest
from pydantic import JsonValue

from evallens.service.budgets import Admission, Deadline, in_flight_slot
from evallens.service.chat.answers import CacheKey, CannedAnswer, Sources
from evallens.service.chat.fingerprint import fingerprint
from evallens.service.chat.preflight import PreflightState
from evallens.service.chat.prompt import BuiltPrompt, Passage, PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest, ChunkChoice, DeltaMessage
from evallens.service.chat.responses import ChunkEvents
from evallens.service.chat.serving import sources_of
from evallens.service.engines import (
    EngineError,
    OpenAIEngine,
    OpenAIOptions,
    create_router,
    vllm_engine,
    vllm_options,
)
from evallens.service.engines.excerpts import safe_excerpt
from evallens.service.engines.vllm_engine import MAX_SOCKET_PATH_BYTES, choose_dtype, rpc_directory
from evallens.service.errors import BudgetExceeded, ContextLengthExceeded, Overloaded
from evallens.service.rag import RetrievalResult, RetrievedChunk
from evallens.settings import ServiceSettings


def request(*turns: tuple[str, str]) -> ChatCompletionRequest:
    return ChatCompletionRequest(messages=[{"role": role, "content": content} for role, content in turns])


def test_build_messages_puts_the_system_prompt_first() -> None:
    built = build_messages(request(("user", "hi")), PromptContext(system_prompt="Be brief."))
    assert [(m.role, m.content) for m in built.messages] == [("system", "Be brief."), ("user", "hi")]
    assert built.cited_ids == ()
    assert built.num_chars == len("Be brief.") + 2


def test_build_messages_keeps_the_callers_system_prompt_and_adds_passages() -> None:
    context = PromptContext(system_prompt="ignored", passages=[Passage("doc-1", "Paris is in France.")])
    built = build_messages(request(("system", "Own rules."), ("user", "Where is Paris?")), context)
    assert built.messages[0].role == "system"
    assert built.messages[0].content.startswith("Own rules.")
    assert "[doc-1] Paris is in France." in built.messages[0].content
    assert "ignored" not in built.messages[0].content
    assert built.cited_ids == ("doc-1",)


def test_request_stop_accepts_a_string_or_a_list() -> None:
    assert ChatCompletionRequest(messages=[{"role": "user", "content": "x"}], stop="END").stop_sequences == (
        "END",
    )
    two = ChatCompletionRequest(messages=[{"role": "user", "content": "x"}], stop=["a", "b"])
    assert two.stop_sequences == ("a", "b")


def test_admission_refuses_when_slots_and_queue_are_full() -> None:
    async def scenario() -> tuple[int, int]:
        admission = Admission(max_in_flight=1, max_queued=1, retry_after_s=2)
        await admission.acquire()
        waiter = asyncio.create_task(admission.acquire())
        await asyncio.sleep(0)
        queued = admission.num_queued
        with pytest.raises(Overloaded) as refused:
            admission.check()
        assert refused.value.headers == {"Retry-After": "2"}
        admission.release()
        await waiter
        return queued, admission.num_in_flight

    assert asyncio.run(scenario()) == (1, 1)


def test_waiting_for_a_slot_counts_against_the_first_token_budget() -> None:
    async def scenario() -> None:
        admission = Admission(max_in_flight=1, max_queued=5, retry_after_s=1)
        await admission.acquire()
        with pytest.raises(BudgetExceeded) as missed:
            async with in_flight_slot(admission, Deadline(ttft_budget_s=0.01, total_budget_s=60)):
                pass
        assert missed.value.code == "time_to_first_token_timeout"
        assert admission.num_queued == 0

    asyncio.run(scenario())


def test_context_length_error_names_the_counts() -> None:
    error = ContextLengthExceeded(num_prompt_tokens=30, max_tokens=100, max_model_len=64)
    assert error.status_code == 400
    assert (
        "64 tokens" in error.message
        and "130 tokens" in error.message
        and "30 in the messages" in error.message
    )


def test_fingerprint_is_canonical_and_sensitive() -> None:
    main: dict[str, JsonValue] = {"model": "m", "dtype": "bfloat16"}
    config: dict[str, JsonValue] = {"engines": {"main": main}, "defaults": {"temperature": 0.7}}
    flipped: dict[str, JsonValue] = dict(reversed(main.items()))
    reordered: dict[str, JsonValue] = {"defaults": {"temperature": 0.7}, "engines": {"main": flipped}}
    changed: dict[str, JsonValue] = {"engines": {"main": main}, "defaults": {"temperature": 0.8}}
    assert fingerprint(config) == fingerprint(reordered)
    assert fingerprint(config) != fingerprint(changed)
    assert len(fingerprint(config)) == 64


def test_service_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("EVALLENS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("EVALLENS_SERVICE_PORT", "9123")
    monkeypatch.setenv("EVALLENS_ENGINE", "openai")
    monkeypatch.setenv("EVALLENS_MAX_MODEL_LEN", "512")
    monkeypatch.setenv("EVALLENS_TTFT_BUDGET_S", "2.5")
    settings = ServiceSettings()
    assert (settings.service_port, settings.engine, settings.max_model_len) == (9123, "openai", 512)
    assert settings.ttft_budget_s == 2.5
    assert settings.resolved_model_path == tmp_path / "models" / "smollm2-135m-instruct"


def test_sources_are_the_prompt_s_chunks_a_cached_answer_s_own_or_none_for_a_guard() -> None:
    chunks = [
        RetrievedChunk("refunds#1", "refunds", "Refunds take 5 days.", 5, 0.9, 0.9),
        RetrievedChunk("shipping#0", "shipping", "We ship in 2 days.", 5, 0.8, 0.8),
        RetrievedChunk("refunds#0", "refunds", "Refunds > Timing", 3, 0.7, 0.7),
    ]
    key = CacheKey(
        use=True,
        deterministic=True,
        tenant="t",
        project="t",
        retrieval=True,
        generation=0,
        single_turn=True,
        question="Refund?",
    )
    state = PreflightState("t", True, key, "t", result=RetrievalResult("Refund?", chunks, best_relevance=0.9))
    built = BuiltPrompt((), tuple(chunk.id for chunk in chunks))
    assert sources_of(state, built) == Sources(built.cited_ids, ("refunds", "shipping"))

    cached = CannedAnswer("From the cache.", sources=Sources(("old#0",), ("old",)))
    state.canned, state.semantic_hit = cached, True
    assert sources_of(state, built) == cached.sources  # what the cached answer rested on
    state.canned, state.semantic_hit = CannedAnswer("I can't help with that."), False
    assert sources_of(state, built) == Sources()  # a guard's decline rests on nothing


@pytest.mark.parametrize(
    "text",
    ["", " hello", 'quote " and \\ backslash', "line\nbreak\ttab\r\x00\x1f\x7f", "héllo ✓ 日本 🙂", "</p>"],
)
def test_a_text_delta_event_is_the_response_models_event_byte_for_byte(text: str) -> None:
    events = ChunkEvents("chatcmpl-abc", 'model "x"')
    by_model = events.event([ChunkChoice(delta=DeltaMessage(content=text))])
    assert events.text(text) == by_model
    assert json.loads(by_model[len("data: ") :])["choices"][0]["delta"] == {"content": text}


@pytest.mark.parametrize(
    ("cuda", "flags", "expected"),
    [
        (False, {"fpu", "avx", "avx2", "fma"}, "float32"),  # AVX2 only: bfloat16 would be emulated
        (False, {"avx2", "avx512f", "avx512_bf16"}, "bfloat16"),
        (False, {"avx2", "amx_tile", "amx_bf16"}, "bfloat16"),
        (False, {"fp", "asimd", "bf16"}, "bfloat16"),  # Arm with the BF16 extension
        (False, set(), "float32"),  # flags unreadable
        (True, {"avx2"}, "bfloat16"),  # a GPU computes it natively
    ],
)
def test_auto_dtype_is_bfloat16_only_where_the_hardware_computes_it(
    cuda: bool, flags: set[str], expected: str
) -> None:
    assert choose_dtype(cuda=cuda, cpu_flags=frozenset(flags)) == expected


def test_a_dtype_set_by_hand_reaches_vllm_as_it_is() -> None:
    for dtype in ("bfloat16", "float16", "float32"):
        assert vllm_options(ServiceSettings(dtype=dtype)).dtype == dtype
    assert vllm_options(ServiceSettings()).dtype in ("bfloat16", "float32")  # never "auto": /v1/config


@pytest.mark.parametrize(
    ("cpuinfo", "expected"),
    [
        ("processor\t: 0\nflags\t: fpu avx2 avx512_bf16\nfpu\t: yes\n", {"fpu", "avx2", "avx512_bf16"}),
        ("processor\t: 0\nFeatures\t: fp asimd bf16\n", {"fp", "asimd", "bf16"}),
        ("processor\t: 0\n", set()),
    ],
)
def test_cpu_flags_come_from_cpuinfo(
    cpuinfo: str, expected: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    monkeypatch.setattr(vllm_engine, "CPUINFO", path)
    assert vllm_engine.cpu_flags() == expected
    monkeypatch.setattr(vllm_engine, "CPUINFO", tmp_path / "missing")
    assert vllm_engine.cpu_flags() == frozenset()


def test_engine_sockets_stay_within_the_kernel_s_path_limit(tmp_path: Path) -> None:
    # vLLM binds <rpc dir>/<uuid4>; past 107 bytes the bind fails and the engine never loads
    with tempfile.TemporaryDirectory(prefix="el") as short:  # pytest's tmp_path itself may be too deep
        shallow = Path(short) / "cache"
        assert rpc_directory(shallow) == shallow / "vllm-rpc" and (shallow / "vllm-rpc").is_dir()
    deep = tmp_path / ("d" * 80) / "cache"
    chosen = rpc_directory(deep)
    assert chosen.is_dir() and stat.S_IMODE(chosen.stat().st_mode) == 0o700
    assert len(os.fsencode(chosen / str(uuid.uuid4()))) <= MAX_SOCKET_PATH_BYTES


def test_an_engine_excerpt_masks_the_prompt_however_quoted_and_keeps_the_engine_s_own_words() -> None:
    """The prompt's text is found on its letters and digits (JSON escapes, quotes and case between them do
    not hide it), masked before the cut (no cut leaves a piece of it); counts and the engine's own words,
    and prompt words too short to tell apart from them, stay."""
    prompt = ["Internal: refunds over $500 need Dana's approval.", 'Is my order "A-77" from\nMay 3 late?']
    quoted = json.dumps({"messages": prompt, "usage": {"prompt_tokens": 9}})
    excerpt = safe_excerpt(f"Template error (code 500) rendering {quoted}", prompt, 400)
    # both messages one masked run: nothing but punctuation stands between them
    assert (
        excerpt
        == 'Template error (code 500) rendering {"messages": ["[PROMPT]?"], "usage": {"prompt_tokens": 9}}'
    )
    long_prompt = ["word " * 400]
    cut = safe_excerpt(f"failed on {long_prompt[0].upper()}", long_prompt, 30)
    assert cut == "failed on [PROMPT] ", cut  # its last space is no letter
    assert safe_excerpt("refunds over limit", prompt, 400) == "refunds over limit"


def test_the_small_engine_keeps_vllm_stats_only_beside_an_engine_without_them(tmp_path: Path) -> None:
    """Beside a vLLM main engine the small one's stat logger would take the main engine's vllm:* metrics
    off /metrics, so it runs without; beside an OpenAI-compatible main engine its are the only ones."""
    settings = ServiceSettings(route_small_model_path=tmp_path)
    beside_vllm = create_router(settings).small
    beside_openai = create_router(settings, OpenAIEngine(OpenAIOptions("http://127.0.0.1:9", "m"))).small
    assert isinstance(beside_vllm, vllm_engine.VllmEngine) and not beside_vllm.options.log_stats
    assert isinstance(beside_openai, vllm_engine.VllmEngine) and beside_openai.options.log_stats


def start_failure(engine: object) -> str:
    assert isinstance(engine, vllm_engine.VllmEngine)
    with pytest.raises(EngineError) as failed:
        asyncio.run(engine.start())
    return str(failed.value)


def test_only_the_model_pull_prepares_is_advised_to_be_pulled(tmp_path: Path) -> None:
    """Every missing model was advised `evallens model pull`, also a directory the user named for a model
    of their own (the main one or the small route's), which the pull never prepares."""
    data_dir, mine = tmp_path / "data", tmp_path / "mine"
    mine.mkdir()
    default = ServiceSettings(data_dir=data_dir).resolved_model_path
    pulled = create_router(ServiceSettings(data_dir=data_dir, route_small_model_path=mine))
    assert start_failure(pulled.main) == f"no model at {default}: run `evallens model pull`"
    assert start_failure(pulled.small) == f"no model at {mine} (no config.json there)"
    named = create_router(ServiceSettings(data_dir=data_dir, model_path=mine, route_small_model_path=default))
    assert start_failure(named.main) == f"no model at {mine} (no config.json there)"
    # the default directory, while the pull writes to the user's (EVALLENS_MODEL_PATH): nothing pulls it
    assert start_failure(named.small) == f"no model at {default} (no config.json there)"
    named_default = ServiceSettings(data_dir=data_dir, model_path=default)  # where the pull writes anyway
    assert start_failure(create_router(named_default).main).endswith("run `evallens model pull`")
