"""Migrations and lookups against a real database (SQLite; PostgreSQL when TEST_DATABASE_URL)."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, func, inspect, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.catalogue.errors import NotFound
from service.catalogue.hf_config import import_config
from service.catalogue.lookup import (
    all_gpu_specs,
    all_model_specs,
    gpu_spec,
    link_spec,
    model_spec,
    number_format,
)
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.db import create_engine, downgrade, head_revision, migrate
from service.settings import sync_url
from service.sizing.formats import FORMATS
from service.sizing.models import validate_model

TABLES = {"api_keys", "gpus", "interconnects", "models", "number_formats"}


@pytest.fixture
async def session(database_url: str) -> AsyncIterator[AsyncSession]:
    engine = create_engine(database_url)
    async with async_sessionmaker(engine)() as db_session:
        yield db_session
    await engine.dispose()


async def test_shipped_row_counts(session: AsyncSession) -> None:
    counts = {
        table.__tablename__: await session.scalar(select(func.count()).select_from(table))
        for table in (Gpu, Interconnect, Model, Format)
    }
    assert counts == {
        "gpus": 13,  # 11 from migration 0002, GH200 from 0013, MI355X from 0014
        "interconnects": 12,  # 11 from 0002, MI355X's Infinity Fabric from 0014
        "models": 20,  # 16 from 0002, Qwen3-Next 0007, Qwen3 14B 0012, two GLMs 0013
        "number_formats": len(FORMATS),
    }


async def test_migrated_formats_equal_the_core(session: AsyncSession) -> None:
    for slug, shipped in FORMATS.items():
        assert await number_format(session, slug, "weight_format") == shipped


async def test_every_model_is_consistent(session: AsyncSession) -> None:
    specs = await all_model_specs(session)
    assert len(specs) == 20  # the shipped rows (test_shipped_row_counts)
    for spec in specs:
        validate_model(spec)


async def test_gpu_spec_resolves_links(session: AsyncSession) -> None:
    h100 = await gpu_spec(session, "h100")
    assert h100.slug == "h100-sxm"
    assert h100.capacity_bytes("driver") == 85_520_809_984
    assert h100.nvlink is not None and h100.nvlink.bytes_per_s_per_direction == 450 * 10**9
    assert h100.host_link is not None and h100.host_link.bytes_per_s_per_direction == 64 * 10**9
    gb200 = await gpu_spec(session, "gb200")
    assert gb200.gpus_per_node == 72
    assert gb200.host_link is not None and gb200.host_link.kind == "c2c"
    mi300x = await gpu_spec(session, "mi300x")
    assert mi300x.driver_visible_bytes == 205_822_885_888
    assert [g.slug for g in await all_gpu_specs(session)][:3] == ["a100-40gb", "a100-80gb", "b200"]


async def test_0014_ships_the_mi355x_with_its_sourced_figures(session: AsyncSession) -> None:
    # The figures of gpus_0014.json's sources: AMD's MI350 table (288 GB HBM3E, 8 TB/s,
    # 1,400 W, 2.5 / 5.0 PF dense BF16 / FP8 = 256 CUs x 4,096 / 8,192 FLOPs a clock x 2.4 GHz
    # = 2,516.6 / 5,033.2 TFLOPS, MXFP4 in the matrix cores) and torch's 287.98 GiB total:
    # 287.98 x 1,073,741,824 = 309,216,170,475 B (truncated). Reached by its alias.
    row = await session.scalar(select(Gpu).where(Gpu.slug == "mi355x"))
    assert row is not None
    assert (row.vendor, row.architecture, row.memory_type) == ("AMD", "CDNA 4 (gfx950)", "HBM3E")
    assert (row.memory_bytes, row.driver_visible_bytes) == (288 * 10**9, 309_216_170_475)
    assert row.hbm_bytes_per_s == 8 * 10**12
    assert (row.bf16_dense_tflops, row.fp8_dense_tflops, row.tdp_w) == (2516.6, 5033.2, 1400)
    assert (row.fp8, row.fp4, row.gpus_per_node) == (True, True, 8)
    assert row.aliases == ["mi355"]
    assert row.sources and any("mi350.rst" in s for s in row.sources)
    spec = await gpu_spec(session, "mi355")
    assert spec.slug == "mi355x" and spec.capacity_bytes("driver") == 309_216_170_475
    assert spec.compute_capability is None  # an AMD GPU: no CUDA compute capability
    # Seven links of 16 lanes at 38.4 Gbps: 7 x 38.4e9 x 16 / 8 = 537.6 GB/s per direction
    # (MI300X's row: 448); the host link is PCIe 5 x16's 64 GB/s.
    assert spec.nvlink is not None and spec.nvlink.slug == "infinity-fabric-4"
    assert spec.nvlink.bytes_per_s_per_direction == 537_600_000_000
    assert spec.host_link is not None and spec.host_link.bytes_per_s_per_direction == 64 * 10**9


def test_0014_downgrade_removes_the_mi355x_and_its_link(database_url: str) -> None:
    from sqlalchemy import create_engine as create_sync_engine
    from sqlalchemy import text

    engine = create_sync_engine(sync_url(database_url))

    def present() -> tuple[bool, bool]:
        with engine.begin() as conn:
            gpu = conn.execute(text("SELECT count(*) FROM gpus WHERE slug = 'mi355x'")).scalar()
            link = conn.execute(
                text("SELECT count(*) FROM interconnects WHERE slug = 'infinity-fabric-4'")
            ).scalar()
        return gpu == 1, link == 1

    try:
        assert present() == (True, True)
        downgrade(database_url, "0013")
        assert present() == (False, False)
        migrate(database_url)
        assert present() == (True, True)
    finally:
        engine.dispose()


async def test_lookups_raise_not_found_naming_the_field(session: AsyncSession) -> None:
    with pytest.raises(NotFound) as unknown:
        await model_spec(session, "llama-3.1-7b", field="model")
    assert unknown.value.field == "model"
    assert "llama-3.1-8b" in unknown.value.suggestions
    with pytest.raises(NotFound) as ambiguous:
        await gpu_spec(session, "a100", field="gpus[0]")
    assert ambiguous.value.ambiguous and ambiguous.value.suggestions == ["a100-40gb", "a100-80gb"]
    assert (await link_spec(session, "pcie5")).slug == "pcie-5-x16"
    assert (await model_spec(session, "llama-70b")).total_params == 70_553_706_496
    assert (await model_spec(session, "deepseek-r1")).slug == "deepseek-v3"


def test_migrations_down_to_base_and_up_again(database_url: str) -> None:
    from sqlalchemy import create_engine as create_sync_engine

    def tables() -> set[str]:
        engine = create_sync_engine(sync_url(database_url))
        try:
            return set(inspect(engine).get_table_names()) - {"alembic_version"}
        finally:
            engine.dispose()

    assert tables() >= TABLES
    downgrade(database_url, "base")
    assert not tables() & TABLES
    migrate(database_url)
    assert tables() >= TABLES
    assert head_revision() is not None


def _insert_users_model(conn: Connection, slug: str) -> None:
    """A small model row named 'mine' that a database's users added, in the columns every
    revision from 0002 on has (the later ones take their server defaults)."""
    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO models (slug, name, aliases, notes, sources, total_params, "
            "active_params, active_params_incl_embedding, layers, hidden_size, "
            "intermediate_size, attention_heads, kv_heads, head_dim, vocab_size, "
            "max_context_tokens, experts, experts_per_token, kv_lora_rank, "
            "qk_rope_head_dim, sliding_window_tokens, layer_types, created_at, "
            "updated_at) VALUES (:slug, 'mine', '[]', '', '[]', 1000000, 1000000, 0, 4, "
            "64, 256, 4, 4, 0, 0, 4096, 0, 0, 0, 0, 0, '[]', CURRENT_TIMESTAMP, "
            "CURRENT_TIMESTAMP)"
        ),
        {"slug": slug},
    )


def test_0007_keeps_a_model_its_users_already_hold_under_the_new_slug(database_url: str) -> None:
    # A database where someone imported Qwen3-Next before 0007 shipped it: the upgrade keeps
    # their row instead of failing on the unique slug; the shipped one arrives where the slug
    # is free (the same upgrade once their row is gone).
    from sqlalchemy import create_engine as create_sync_engine
    from sqlalchemy import text

    slug = "qwen3-next-80b-a3b"
    engine = create_sync_engine(sync_url(database_url))
    try:
        downgrade(database_url, "0006")
        with engine.begin() as conn:
            _insert_users_model(conn, slug)
        migrate(database_url)
        with engine.begin() as conn:
            names = conn.execute(text("SELECT name FROM models WHERE slug = :s"), {"s": slug})
            assert list(names.scalars()) == ["mine"]
            conn.execute(text("DELETE FROM models WHERE slug = :s"), {"s": slug})
        downgrade(database_url, "0006")
        migrate(database_url)
        with engine.begin() as conn:
            names = conn.execute(text("SELECT name FROM models WHERE slug = :s"), {"s": slug})
            assert list(names.scalars()) == ["Qwen3-Next 80B-A3B"]
    finally:
        engine.dispose()


def test_0008_adds_the_architecture_and_names_the_shipped_classes(database_url: str) -> None:
    # Upgraded from 0007: the column arrives NOT NULL with '' for every row (a row its users
    # added keeps '': unknown), and the shipped rows model_updates.json lists for 0008 get
    # their config.json class; the text-only Gemma 3 row, with none in the reference, stays ''.
    # The downgrade drops the column again.
    from sqlalchemy import create_engine as create_sync_engine
    from sqlalchemy import text

    engine = create_sync_engine(sync_url(database_url))

    def columns() -> dict[str, dict[str, object]]:
        return {c["name"]: c for c in inspect(engine).get_columns("models")}

    def architectures() -> dict[str, str]:
        with engine.begin() as conn:
            rows = conn.execute(text("SELECT slug, architecture FROM models"))
            return {slug: architecture for slug, architecture in rows}

    try:
        downgrade(database_url, "0007")
        assert "architecture" not in columns()
        with engine.begin() as conn:
            _insert_users_model(conn, "mine-0008")
        migrate(database_url)
        column = columns()["architecture"]
        assert column["nullable"] is False
        assert getattr(column["type"], "length", None) == 128
        stored = architectures()
        assert stored["mine-0008"] == ""
        assert stored["llama-3.1-8b"] == "LlamaForCausalLM"
        assert stored["mixtral-8x22b"] == "MixtralForCausalLM"
        assert stored["gemma-3-27b"] == ""
        assert sum(1 for a in stored.values() if a) == 18  # 20 shipped (0012, 0013), 2 unknown
    finally:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM models WHERE slug = 'mine-0008'"))
        engine.dispose()


HF_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
LOG_CONFIGS = Path(__file__).resolve().parents[2] / "service/accuracy/cases/vllm_logs/configs"
SHIPPED_CONFIGS = {
    **{path.stem: path for path in HF_CONFIGS.glob("*.json")},
    # The shipped Gemma 3 row is the text model; Qwen3-Next's config sits with its logs.
    "gemma-3-27b": HF_CONFIGS / "gemma-3-27b-text.json",
    "qwen3-next-80b-a3b": LOG_CONFIGS / "qwen3-next-80b-a3b-instruct.json",
}


async def test_shipped_rows_carry_the_checkpoint_their_config_imports_to(
    session: AsyncSession,
) -> None:
    # The rule: a shipped model and the same model imported from its published config.json
    # (POST /models/import) agree to the byte, checkpoint included. By hand for gpt-oss-120b
    # (36 layers of 128 experts, hidden and expert width 2,880): the experts' gate, up and down
    # matrices are 36 x 128 x 3 x 2,880 x 2,880 = 114,661,785,600 values in MXFP4, 4 + 8/32
    # = 4.25 bits: x 17 / 32 = 60,914,073,600 B; the other 116,829,156,672 - 114,661,785,600
    # = 2,167,371,072 parameters (attention, router, biases, embedding, head, norms) BF16:
    # 4,334,742,144 B; 65,248,815,744 B in all, the published tensor bytes (not the
    # 116,829,156,672 x 4.25 / 8 = 62,065,489,482 B of sizing every parameter in MXFP4).
    specs = {spec.slug: spec for spec in await all_model_specs(session)}
    assert set(specs) <= set(SHIPPED_CONFIGS)
    for slug, spec in specs.items():
        raw = json.loads(SHIPPED_CONFIGS[slug].read_text())
        imported = import_config({k: v for k, v in raw.items() if not k.startswith("_")}, slug)
        assert spec.total_params == imported.spec.total_params, slug
        assert (spec.checkpoint_format, spec.checkpoint_bytes) == (
            imported.spec.checkpoint_format,
            imported.spec.checkpoint_bytes,
        ), slug
    assert (specs["gpt-oss-120b"].checkpoint_format, specs["gpt-oss-120b"].checkpoint_bytes) == (
        "mxfp4",
        65_248_815_744,
    )
    assert specs["deepseek-v3"].checkpoint_format == "fp8"
    assert specs["llama-3.1-70b"].checkpoint_format == ""  # published in BF16


def test_0010_sets_the_shipped_checkpoints_and_its_downgrade_clears_them(
    database_url: str,
) -> None:
    # From 0009 the three quantised shipped checkpoints have none ('' / 0); 0010 gives them
    # their format and bytes and leaves a row its users already gave a checkpoint alone; the
    # downgrade clears exactly what it set.
    from sqlalchemy import create_engine as create_sync_engine
    from sqlalchemy import text

    engine = create_sync_engine(sync_url(database_url))

    def checkpoints() -> dict[str, tuple[str, int]]:
        with engine.begin() as conn:
            query = "SELECT slug, checkpoint_format, checkpoint_bytes FROM models"
            rows = conn.execute(text(query))
            return {slug: (fmt, int(size)) for slug, fmt, size in rows if fmt}

    try:
        downgrade(database_url, "0009")
        assert checkpoints() == {}
        with engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE models SET checkpoint_format = 'bf16', "
                    "checkpoint_bytes = 41829662688 WHERE slug = 'gpt-oss-20b'"
                )
            )
        migrate(database_url)
        assert checkpoints() == {
            "deepseek-v3": ("fp8", 673_150_552_416),
            "gpt-oss-20b": ("bf16", 41_829_662_688),  # theirs, kept
            "gpt-oss-120b": ("mxfp4", 65_248_815_744),
        }
        downgrade(database_url, "0009")
        assert checkpoints() == {"gpt-oss-20b": ("bf16", 41_829_662_688)}
    finally:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE models SET checkpoint_format = '', checkpoint_bytes = 0 "
                    "WHERE slug = 'gpt-oss-20b'"
                )
            )
        migrate(database_url)
        # Back at head as the module's other tests expect it.
        assert checkpoints()["gpt-oss-20b"] == ("mxfp4", 13_761_264_768)
        engine.dispose()


def gpu_columns_after_upgrade(
    database_url: str, before: str, column: str, *others: str
) -> dict[str, tuple[object, ...]]:
    """Down to ``before`` (where ``column`` is not yet a GPU column), up to head, and each
    GPU's ``column`` and ``others`` as head stores them, by slug."""
    from sqlalchemy import create_engine as create_sync_engine
    from sqlalchemy import text

    engine = create_sync_engine(sync_url(database_url))
    try:
        downgrade(database_url, before)
        assert column not in {c["name"] for c in inspect(engine).get_columns("gpus")}
        migrate(database_url)
        with engine.begin() as conn:
            rows = conn.execute(text(f"SELECT slug, {', '.join((column, *others))} FROM gpus"))
            return {slug: tuple(values) for slug, *values in rows}
    finally:
        engine.dispose()


def test_0011_adds_the_dense_fp8_peak_from_the_datasheets(database_url: str) -> None:
    # Upgraded from 0010: the column arrives NOT NULL with 0 for every row, the shipped rows of
    # gpu_updates.json get their datasheet figure (H100 SXM FP8 3,958 TFLOPS with sparsity ->
    # 1,979 dense; RTX 4090's BF16 165.2 where the row had 0); the A100s keep 0 (no FP8).
    stored = gpu_columns_after_upgrade(
        database_url, "0010", "fp8_dense_tflops", "bf16_dense_tflops"
    )
    assert stored["h100-sxm"] == (1979.0, 989.0)
    assert stored["mi300x"] == (2614.9, 1307.4)
    assert stored["rtx-4090"] == (330.3, 165.2)
    assert stored["a100-80gb"] == (0.0, 312.0)


def test_0015_keeps_pcie_peer_to_peer_true_but_for_the_rtx_4090(database_url: str) -> None:
    # Upgraded from 0014: the column arrives NOT NULL and true for every row; gpu_updates.json
    # turns it off for the RTX 4090 (its driver refuses PCIe peer access).
    stored = {
        slug: bool(p2p)
        for slug, (p2p,) in gpu_columns_after_upgrade(
            database_url, "0014", "pcie_peer_to_peer"
        ).items()
    }
    assert stored["rtx-4090"] is False
    assert stored["l40s"] is True
    assert stored["h100-pcie"] is True
    assert [s for s, p2p in stored.items() if not p2p] == ["rtx-4090"]


def test_0016_adds_the_dense_fp4_peak_from_the_datasheets(database_url: str) -> None:
    # Upgraded from 0015: the column arrives NOT NULL with 0 for every row; gpu_updates.json
    # gives the FP4-capable shipped GPUs theirs, half the sparse datasheet figure: HGX B200
    # 144 PF for 8 GPUs -> 18 -> 9,000 TFLOPS; GB200 NVL72 1,440 PF for 72 -> 20 -> 10,000;
    # MI355X MXFP4 10 PF dense (256 CUs x 16,384 FLOPs a clock x 2.4 GHz = 10,066.4 TFLOPS).
    stored = {
        slug: fp4
        for slug, (fp4,) in gpu_columns_after_upgrade(
            database_url, "0015", "fp4_dense_tflops"
        ).items()
    }
    assert stored["b200"] == 9000.0
    assert stored["gb200"] == 10000.0
    assert stored["mi355x"] == 10066.4
    assert {s for s, fp4 in stored.items() if fp4} == {"b200", "gb200", "mi355x"}


def test_0017_adds_the_torch_visible_totals_read_from_start_up_logs(database_url: str) -> None:
    # Upgraded from 0016: the column arrives NOT NULL with 0 for every row; gpu_updates.json
    # gives the GPUs with a log theirs: H100 SXM 79.18 GiB in the llm-d logs, nvidia-smi's
    # 85,520,809,984 B less 494,000,000; A100 80GB 80 GiB (85,899,345,920 B) less 805,000,000;
    # MI300X above its driver figure, 205,822,885,888 + 314,000,000 B. The B200 has no log.
    stored = {
        slug: total
        for slug, (total,) in gpu_columns_after_upgrade(
            database_url, "0016", "torch_visible_bytes"
        ).items()
    }
    assert stored["h100-sxm"] == 85_026_809_984
    assert stored["a100-80gb"] == 85_094_345_920
    assert stored["mi300x"] == 206_136_885_888
    assert stored["b200"] == 0
    assert {s for s, total in stored.items() if total} == {
        *("h100-sxm", "a100-80gb", "a100-40gb", "h200", "l40s", "rtx-4090", "mi300x", "mi355x")
    }
