"""`dpctl simulate`: flow-level load, bottleneck, completion time and losses of a workload."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from controller.cli.common import (
    DEFAULT_FABRIC,
    FabricOpt,
    JsonOpt,
    command_app,
    fail,
    load_fabric,
    out,
    print_json,
)
from controller.errors import DpctlError
from controller.facts import Fabric
from controller.simulate.links import links_document, write_links
from controller.simulate.model import Scenario
from controller.simulate.runs import mode_bars, run

app = command_app()

FIGURES = (
    "flows",
    "links",
    "max_link_load",
    "fabric_max_load",
    "completion_time_ratio",
    "lost_flows",
    "aux_flows",
    "throughput_lost",
)


def _compare(built: Fabric, report: Path, qps: int, seed: int, fabric: Path, as_json: bool) -> None:
    # the report draws figures: matplotlib (0.3 s to import) only for --compare and --plot
    from controller.simulate.report import write_compare

    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    summary = write_compare(built, report, qps, seed, today, str(fabric))
    if as_json:
        print_json(summary)
        return
    out.print(f"[green]wrote[/] {report}: {summary['runs']} runs, {summary['seconds']} s")
    for key, value in dict(summary["headline"]).items():  # type: ignore[call-overload]
        out.print(f"  bisection {key}: completion {value:.2f}x ideal")


def _run(
    built: Fabric, scenario: Scenario, plot: Path | None, links_out: Path | None
) -> dict[str, Any]:
    """One scenario: its figures, the plots written and the per-link loads file."""
    result, topo = run(built, scenario)
    if links_out is not None:
        write_links(links_document(result, topo), links_out)
    figures: list[Path] = []
    if plot is not None:
        # matplotlib (0.3 s to import) only when figures are asked for
        from controller.simulate.plots import plot_modes, plot_run

        figures = plot_run(result, topo, plot)
        figures += plot_modes(
            mode_bars(built, scenario),
            f"{built.intent.name}: {scenario.workload}, completion by LB mode",
            plot,
            f"modes-{scenario.workload}",
        )
    data = result.to_dict() | {"figures": [str(p) for p in figures]}
    if links_out is not None:
        data["links_out"] = str(links_out)
    return data


def _print_run(built: Fabric, scenario: Scenario, data: dict[str, Any]) -> None:
    table = Table(
        title=f"simulate {built.intent.name}: {scenario.workload}, {scenario.lb}, "
        f"{scenario.planes} plane(s)"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key in FIGURES:
        value = data[key]
        table.add_row(key, f"{value:,}" if isinstance(value, int) else f"{value:.4g}")
    out.print(table)
    for line in data["lost_examples"]:
        out.print(f"  lost: {line}")
    for path in data["figures"]:
        out.print(f"  figure: {path}")
    if "links_out" in data:
        out.print(f"  per-link loads: {data['links_out']}")


WorkloadOpt = Annotated[
    str, typer.Option("--workload", "-w", help="ring | tree | all-to-all | bisection.")
]
LbOpt = Annotated[
    str | None,
    typer.Option("--lb", help="ecmp | wcmp | ars | pbr | spray (default: the intent's)."),
]
PlanesOpt = Annotated[int, typer.Option("--planes", help="2, or 1 for the single-plane baseline.")]
QpsOpt = Annotated[int, typer.Option("--qps", help="RoCEv2 queue pairs per connection.")]
FailOpt = Annotated[
    list[str] | None,
    typer.Option("--fail", help="DEVICE or DEVICE:PORT to fail (repeatable)."),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the QP source ports.")]
HashSeedsOpt = Annotated[
    str, typer.Option("--hash-seeds", help="same | per-switch (ECMP hash seed and window).")
]
HashSelectOpt = Annotated[
    str,
    typer.Option("--hash-select", help="threshold (RFC 2992) | modulo: ECMP member choice."),
]
PlotOpt = Annotated[
    Path | None, typer.Option("--plot", help="Write PNG/SVG figures into this folder.")
]
CompareOpt = Annotated[
    bool, typer.Option("--compare", help="Run the whole matrix and write the report.")
]
ReportOpt = Annotated[
    Path, typer.Option("--report", help="Where --compare writes its Markdown report.")
]
LinksOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--links-out",
        help="Write every cable's load here (the file `report --simulate` reads).",
    ),
]


@app.command()
def simulate(
    fabric: FabricOpt = DEFAULT_FABRIC,
    workload: WorkloadOpt = "ring",
    lb: LbOpt = None,
    planes: PlanesOpt = 2,
    qps: QpsOpt = 4,
    fail_: FailOpt = None,
    seed: SeedOpt = 0,
    hash_seeds: HashSeedsOpt = "same",
    hash_select: HashSelectOpt = "threshold",
    plot: PlotOpt = None,
    compare: CompareOpt = False,
    report: ReportOpt = Path("docs/simulation.md"),
    links_out: LinksOutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Flow-level load, bottleneck, completion time and losses of a workload on the fabric."""
    try:
        built = load_fabric(fabric)
        if compare and links_out is not None:
            raise DpctlError("--links-out", "writes the loads of one run, not of --compare")
        if compare:
            _compare(built, report, qps, seed, fabric, as_json)
            return
        scenario = Scenario(
            workload=workload,
            lb=lb or built.intent.load_balancing.mode,
            planes=planes,
            qps=qps,
            fail=tuple(fail_ or ()),
            seed=seed,
            hash_seeds=hash_seeds,
            selection=hash_select,
        )
        data = _run(built, scenario, plot, links_out)
    except DpctlError as exc:
        fail(exc, as_json)
    if as_json:
        print_json(data)
    else:
        _print_run(built, scenario, data)
