"""The `diffmech` command."""

import argparse
import json
import math
import os
import pathlib
import sys
import time


def _start_jax(x64: bool = True) -> None:
    """The CLI owns its process: float64 (published figures), and programs run in the
    calling thread (JAX's asynchronous CPU dispatch costs 50–80 µs a call on 2 cores;
    README, "CPU dispatch"). Both are read before JAX's first array."""
    import jax

    if x64:
        jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_enable_async_dispatch", False)


def _out_folder(out: str) -> str | None:
    """Create the output folder `out` before any computation; the one-line reason it
    cannot be used (an existing file, a path through a file), or None."""
    if os.path.exists(out) and not os.path.isdir(out):
        return f"--out {out} exists and is not a folder; choose another name"
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        return f"--out {out}: cannot create the folder ({e.strerror or e})"
    return None


def _demo(args) -> int:
    bad = _out_folder(args.out)
    if bad:
        print(f"diffmech demo: {bad}", file=sys.stderr)
        return 2
    _start_jax()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import diffmech as dm
    from diffmech import fourbar as fbk, plot

    os.makedirs(args.out, exist_ok=True)
    fb = dm.FourBar.seed_crank_rocker()
    lim = fbk.crank_limits(fb)
    print("diffmech demo: the crank-rocker of Bai et al. (2024), Section 7")
    print(f"  design        {fb}  Grashof class: {fbk.grashof(fb)}; crank turns fully: {bool(lim.full_rotation)}")
    q0 = np.asarray(fbk.assemble(fb, 0.0))
    print(f"  q0 at θA = 0  {np.array2string(q0, precision=6)}  (printed: [1 0 0.3044 0.9534 -0.3996 0.9167])")
    print("  Section 7.1 kinematics: crank at 2π rad/s, sampled every h seconds over one revolution")
    sweeps, summary = {}, {"design": np.asarray(fb.lengths).tolist(), "kinematics": {}}
    for h in (0.01, 0.03, 0.05):
        t = np.arange(0.0, 1.0 + h / 2, h)
        t0 = time.perf_counter()
        s = fbk.sweep(fb, 2 * np.pi * t)
        s.q.block_until_ready()
        wall = time.perf_counter() - t0
        q = np.asarray(s.q)
        norm_err = float(np.max(np.abs(np.linalg.norm(q.reshape(-1, 3, 2), axis=-1) - 1)))
        closure = float(np.max(np.asarray(fbk.closure_residual(fb, s.q))))
        rocker = np.degrees(np.arctan2(q[:, 5], q[:, 4]))
        summary["kinematics"][str(h)] = dict(
            steps=len(t),
            converged=int(np.sum(np.asarray(s.converged))),
            max_norm_error=norm_err,
            max_loop_closure_m=closure,
            rocker_swing_deg=[float(rocker.min()), float(rocker.max())],
            wall_s_incl_compile=wall,
        )
        print(
            f"    h = {h:.2f} s: {len(t):3d} steps, converged {int(np.sum(np.asarray(s.converged)))}/{len(t)}, "
            f"max |‖q‖−1| = {norm_err:.1e}, max loop gap = {closure:.1e} m, "
            f"rocker swings {rocker.min():.2f}° … {rocker.max():.2f}°"
        )
        sweeps[f"h = {h} s"] = s
    fig = plot.fourbar_attitudes(sweeps)
    fig.suptitle("Coupler and rocker attitudes and ‖q‖ − 1 (cf. Bai et al. Fig. 3)")
    fig.savefig(os.path.join(args.out, "fig3_attitudes.png"), dpi=110)
    fine = fbk.sweep(fb, np.linspace(0, 2 * np.pi, 361))
    ax = plot.fourbar_track(fb, fine.q, every=15, point=(0.125, 0.0))
    ax.set_title("Crank-rocker track (cf. Bai et al. Fig. 4)")
    ax.figure.savefig(os.path.join(args.out, "fig4_track.png"), dpi=110)
    plt.close("all")
    summary["dynamics"] = _demo_dynamics(args, fb)
    with open(os.path.join(args.out, "demo_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(
        f"  wrote {args.out}/fig3_attitudes.png, fig4_track.png, fig5_crank_rocker_dynamics.png, "
        "fig6_crank_rocker_track.png,"
    )
    print("        fig7_parallelogram_dynamics.png, fig8_parallelogram_track.png, demo_summary.json")
    return 0


def _demo_dynamics(args, crank_rocker):
    """Sections 7.2 and 7.3: free motion from rest under gravity, 5 s, with the
    reduced Hamiltonian model (default mode, rtol 1e-10)."""
    import jax.numpy as jnp
    import matplotlib.pyplot as plt
    import numpy as np

    import diffmech as dm
    from diffmech import fourbar as fbk, plot

    print(
        "  Sections 7.2-7.3 dynamics: released from rest, gravity "
        f"{tuple(float(g) for g in np.asarray(crank_rocker.gravity))} m/s², "
        f"COM at link midpoints, {args.t1:g} s, mode 'minimal', rtol 1e-10"
    )
    cases = {
        "crank_rocker": (crank_rocker, [1, 0, 0.3044, 0.9534, -0.3996, 0.9167], "5", "6"),
        "parallelogram": (dm.FourBar.seed_parallelogram(), [0.6, 0.8, 1, 0, 0.6, 0.8], "7", "8"),
    }
    out = {}
    for name, (fb, q0_printed, f_dyn, f_track) in cases.items():
        t0 = time.perf_counter()
        tr = fbk.simulate_dynamics(fb, q0_printed, 0.0, args.t1, saveat=jnp.linspace(0.0, args.t1, 501))
        tr.q.block_until_ready()
        wall = time.perf_counter() - t0
        q = np.asarray(tr.q)
        out[name] = dict(
            q0=q[0].tolist(),
            theta_A_end=float(tr.theta_A[-1]),
            theta_A_range=[float(tr.theta_A.min()), float(tr.theta_A.max())],
            max_closure_residual=float(np.max(np.asarray(tr.residual))),
            energy_drift=float(tr.energy_drift),
            steps=int(tr.num_steps),
            ok=bool(tr.ok),
            wall_s_incl_compile=wall,
        )
        extra = ""
        if name == "parallelogram":
            out[name]["max_qB_minus_e1"] = float(np.max(np.abs(q[:, 2:4] - [1.0, 0.0])))
            out[name]["max_qA_minus_qD"] = float(np.max(np.abs(q[:, 0:2] - q[:, 4:6])))
            extra = (
                f", max|qB − e1| = {out[name]['max_qB_minus_e1']:.1e}, "
                f"max|qA − qD| = {out[name]['max_qA_minus_qD']:.1e}"
            )
        print(
            f"    {name:13s}: θA(t1) = {out[name]['theta_A_end']:+.10f} rad, θA in "
            f"[{out[name]['theta_A_range'][0]:+.3f}, "
            f"{out[name]['theta_A_range'][1]:+.3f}], max closure residual {out[name]['max_closure_residual']:.1e}, "
            f"energy drift {out[name]['energy_drift']:.1e}{extra}"
        )
        label = name.replace("_", "-")
        fig = plot.fourbar_dynamics(tr, title=f"{label}: momentum and attitudes (cf. Bai et al. Fig. {f_dyn})")
        fig.savefig(os.path.join(args.out, f"fig{f_dyn}_{name}_dynamics.png"), dpi=110)
        ax = plot.fourbar_track(fb, tr.q, every=25)
        ax.set_title(f"{label} track under gravity (cf. Bai et al. Fig. {f_track})")
        ax.figure.savefig(os.path.join(args.out, f"fig{f_track}_{name}_track.png"), dpi=110)
        plt.close("all")
    return out


_PROBLEM_KEYS = {
    "path": {
        "targets",
        "timing",
        "crank_angles",
        "phase",
        "frame",
        "bounds",
        "cyclic_order",
        "grashof",
        "full_rotation",
        "transmission",
    },
    "motion": {"poses", "cyclic_order", "frame", "bounds", "grashof", "full_rotation", "transmission"},
    "function": {"theta_in", "theta_out", "offsets", "ground", "bounds", "grashof", "full_rotation", "transmission"},
}


def _problem_file(path) -> dict:
    """A synthesis problem from a TOML or JSON file: `task` ("path", "motion" or
    "function"), its data (`targets`, `poses`, or `theta_in` and `theta_out`) and the
    keyword arguments of `diffmech.synthesis` (`bounds`, `frame`, `phase`, ...), plus
    optional `starts`, `steps`, `seed`. Raises ValueError naming what is wrong."""
    if path.endswith(".toml"):
        import tomllib

        with open(path, "rb") as f:
            try:
                spec = tomllib.load(f)
            except tomllib.TOMLDecodeError as e:
                raise ValueError(f"{path} is not valid TOML: {e}") from None
    else:
        with open(path) as f:
            try:
                spec = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"{path} must hold a table of settings; got {type(spec).__name__}")
    task = spec.pop("task", "path")
    if task not in _PROBLEM_KEYS:
        raise ValueError(f"{path}: `task` must be one of {sorted(_PROBLEM_KEYS)}; got {task!r}")
    run = {k: spec.pop(k) for k in ("starts", "steps", "seed") if k in spec}
    for key, v in run.items():
        least = 0 if key == "seed" else 1
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ValueError(f"{path}: `{key}` must be an integer ≥ {least}; got {v!r}")
    unknown = set(spec) - _PROBLEM_KEYS[task]
    if unknown:
        raise ValueError(
            f"{path}: unknown setting(s) {sorted(unknown)} for task {task!r}; allowed: "
            f"{sorted(_PROBLEM_KEYS[task] | {'task', 'starts', 'steps', 'seed'})}"
        )
    data = {"path": ("targets",), "motion": ("poses",), "function": ("theta_in", "theta_out")}[task]
    missing = [k for k in data if k not in spec]
    if missing:
        raise ValueError(f"{path}: task {task!r} needs {', '.join(repr(k) for k in missing)}")
    for key in ("bounds", "frame"):
        if key in spec and not isinstance(spec[key], dict):
            raise ValueError(f"{path}: `{key}` must be a table, e.g. {key} = {{ ... }}; got {spec[key]!r}")
    return dict(task=task, run=run, args=spec)


def _synthesize(args) -> int:
    _start_jax()
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    from diffmech import plot, synthesis

    def fail(msg):
        print(f"diffmech synthesize: {msg}", file=sys.stderr)
        return 2

    if not os.path.isfile(args.target):
        return fail(f"no such file: {args.target}")
    bad = _out_folder(args.out)
    if bad:
        return fail(bad)
    try:
        task, kw, run = _synthesis_problem(args)
    except _Refused as e:
        return fail(e)
    call = {
        "path": synthesis.path_generation,
        "motion": synthesis.motion_generation,
        "function": synthesis.function_generation,
    }[task]
    pos = (
        [kw.pop("targets")]
        if task == "path"
        else [kw.pop("poses")]
        if task == "motion"
        else [kw.pop("theta_in"), kw.pop("theta_out")]
    )
    t0 = time.perf_counter()
    try:
        r = call(*pos, **kw, **run, progress=True)
    except (ValueError, RuntimeError, TypeError) as e:
        return fail(e)
    wall = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    design_path = os.path.join(args.out, "design.json")
    synthesis.save_design(r, design_path)
    ax = plot.synthesis(r, pos[0] if task != "function" else np.c_[pos[0], pos[1]])
    ax.figure.savefig(os.path.join(args.out, "synthesis.png"), dpi=110)
    timing = f", timing {kw.get('timing', 'free')}" if task == "path" else ""
    print(
        f"diffmech synthesize: {task} generation, {len(pos[0])} targets{timing}, {run['starts']} starts × "
        f"≤ {run['steps']} L-BFGS steps, {wall:.1f} s"
    )
    _report(task, r, run)
    print(f"  wrote {design_path} (diffmech.linkage.load) and {os.path.join(args.out, 'synthesis.png')}")
    return 0


class _Refused(Exception):
    """A command's input refused, with the message it prints."""


def _synthesis_problem(args):
    """`synthesize`'s problem from its file (a problem file, or a CSV of targets) and
    options: `(task, keyword arguments, run settings)`."""
    import numpy as np

    if args.target.endswith((".toml", ".json")):
        try:
            prob = _problem_file(args.target)
        except (ValueError, OSError) as e:
            raise _Refused(str(e)) from None
        task, kw = prob["task"], prob["args"]
        run = {"starts": 16, "steps": 300, "seed": 0, **prob["run"]}
        run.update(
            {k: v for k, v in (("starts", args.starts), ("steps", args.steps), ("seed", args.seed)) if v is not None}
        )
        if args.timing is not None and task == "path":
            kw["timing"] = args.timing
        if args.full_rotation:
            kw["full_rotation"] = True
        return task, kw, run
    try:
        data = np.loadtxt(args.target, delimiter=",", ndmin=2, comments="#")
    except ValueError:  # a header row
        try:
            data = np.loadtxt(args.target, delimiter=",", ndmin=2, comments="#", skiprows=1)
        except ValueError as e:
            raise _Refused(f"{args.target} is not a CSV of numbers: {e}") from None
    if data.size == 0:
        raise _Refused(f"{args.target} holds no target rows")
    if data.ndim != 2 or data.shape[1] not in (2, 3):
        raise _Refused(
            f"{args.target} must hold rows 'x, y' (or 'x, y, crank angle' for prescribed timing); "
            f"got {data.shape[1] if data.ndim == 2 else data.ndim} columns"
        )
    timing = args.timing or ("prescribed" if data.shape[1] == 3 else "free")
    kw = dict(
        targets=data[:, :2],
        timing=timing,
        full_rotation=args.full_rotation,
        crank_angles=data[:, 2] if (data.shape[1] == 3 and timing == "prescribed") else None,
    )
    given = (("starts", args.starts), ("steps", args.steps), ("seed", args.seed))
    run = {"starts": 16, "steps": 300, "seed": 0, **{k: v for k, v in given if v is not None}}
    return "path", kw, run


def _report(task: str, r, run: dict) -> None:
    """`synthesize`'s summary of the design found."""
    import numpy as np

    d = r.design
    print(
        f"  lengths (crank, coupler, rocker, ground) {np.array2string(np.asarray(d.lengths), precision=6)}, "
        f"branch {d.branch:+d}"
    )
    if task != "function":
        print(
            f"  coupler point {np.array2string(np.asarray(d.point), precision=6)}, crank pivot "
            f"{np.array2string(np.asarray(d.origin), precision=6)}, ground line at {float(d.angle):+.6f} rad"
        )
    print(
        f"  objective {r.objective:.6e}; mean {'angle error' if task == 'function' else 'distance to the targets'} "
        f"{r.error:.3e} (relative {r.relative_error:.2e}); starts within {1e-6:g}: {r.success_rate:.0%}; "
        f"valid starts {int(np.sum(np.asarray(r.valid)))}/{run['starts']}"
    )
    c = r.constraints
    if c:
        lo, hi = c["transmission"]
        print(
            f"  Grashof excess s + l - p - q {c['grashof_excess']:+.4g}; transmission angle over the motion "
            f"[{np.degrees(lo):.1f}°, {np.degrees(hi):.1f}°]; crank turns fully: {c['full_rotation']}"
        )


def _sweep(args) -> int:
    _start_jax(x64=not args.float32)
    from . import _cli_sweep as sw

    devices = "all" if args.devices == "all" else None
    if devices is None:
        try:
            devices = int(args.devices)
        except ValueError:
            devices = 0
        if devices < 1:
            print(f"diffmech sweep: --devices must be 'all' or a count ≥ 1; got {args.devices!r}", file=sys.stderr)
            return 2
    if os.path.exists(args.out):
        print(f"diffmech sweep: --out {args.out} exists; remove it or choose another name", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        info = sw.sweep_file(args.designs, args.out, steps=args.steps, devices=devices, per_device=args.per_device)
    except (ValueError, OSError) as e:
        print(f"diffmech sweep: {e}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    n, N = info["designs"], info["steps"]
    print(
        f"diffmech sweep: {n} designs × {N} crank angles on {info['devices']} {info['platform']} device(s) in "
        f"{wall:.1f} s ({n * N / wall:,.0f} configurations/s incl. compilation); converged "
        f"{info['converged']}/{n * N}; "
        f"wrote {args.out}"
    )
    if info["resumed"]:
        print(
            f"  resumed: {info['resumed']} finished chunk(s) loaded from {args.out}.chunks, {info['computed']} computed"
        )
    return 0


def _number(kind, low, strict):
    """An argparse type: a `kind` (int or float) above `low` (or at least, not
    `strict`), finite; a bad value is argparse's one-line error (exit code 2)."""

    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if kind is int else 'a number'}; got {text!r}")
        if not math.isfinite(v) or (v <= low if strict else v < low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '≥'} {low}; got {text}")
        return v

    return parse


_POSITIVE_INT, _POSITIVE, _COUNT = _number(int, 0, True), _number(float, 0.0, True), _number(int, 0, False)


def _atlas_build(args) -> int:
    from . import _atlas

    out = pathlib.Path(args.out) if args.out is not None else _atlas.path()
    if out.is_dir() or out.suffix != ".npz":
        print(f"diffmech atlas build: --out must name an .npz file to write; got {str(out)!r}", file=sys.stderr)
        return 2
    above = next((p for p in out.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        print(f"diffmech atlas build: --out {str(out)!r}: {str(above)!r} is a file, not a folder", file=sys.stderr)
        return 2
    try:
        out.parent.mkdir(parents=True, exist_ok=True)  # before the build: a bad path fails at once
        atlas = _atlas.build(args.size or _atlas.SIZE, args.seed, out)
    except OSError as e:
        print(f"diffmech atlas build: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(
        f"atlas: {len(atlas)} four-bars whose crank turns fully, {_atlas.POINTS} arc-length samples and "
        f"{2 * _atlas.HARMONICS} Fourier magnitudes each, built in {atlas.meta['build_seconds']} s; "
        f"{out.stat().st_size / 1e6:.1f} MB at {out}"
    )
    return 0


_READS = {".json": "description", ".toml": "description", ".xml": "MJCF", ".mjcf": "MJCF"}
_WRITES = {
    ".json": "description",
    ".toml": "description",
    ".xml": "MJCF",
    ".mjcf": "MJCF",
    ".dxf": "DXF",
    ".svg": "SVG",
    ".csv": "CSV",
}


def _view(args) -> int:
    """`diffmech view NAME_OR_FILE`: the live viewer (`linkage.view`) until interrupted."""
    _start_jax()
    from . import examples, linkage as L

    src = pathlib.Path(args.linkage)
    try:
        if args.linkage == "stewart":  # the seed's Gough–Stewart platform
            from . import parallel

            viewer = parallel.view(parallel.StewartPlatform(), host=args.host, port=args.port)
            lk = None
        elif args.linkage in examples.NAMES + examples.SPATIAL + examples.SEVERAL_INPUTS:
            lk = examples.load(args.linkage)
        elif src.suffix.lower() not in _READS:
            raise L.LinkageError(f"{src}: a bundled example's name or a file {sorted(_READS)} (a description or MJCF)")
        else:
            lk = L.from_mjcf(src) if _READS[src.suffix.lower()] == "MJCF" else L.load(src)
        if lk is not None:
            viewer = L.view(lk, host=args.host, port=args.port)
    except (L.LinkageError, ImportError, OSError, ValueError) as e:
        print(f"diffmech view: {e}", file=sys.stderr)
        return 2
    print(f"diffmech view: {args.linkage if lk is None else lk.name} at {viewer.url} (Ctrl-C stops it)")
    if not args.no_browser:
        import webbrowser

        webbrowser.open(viewer.url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        viewer.close()
    return 0


def _convert(args) -> int:
    """`diffmech convert IN OUT`: between a description (JSON/TOML), MJCF (in and out),
    DXF/SVG (out, planar) and CSV (out: the description's default motion)."""
    from . import linkage as L

    src, dst = pathlib.Path(args.input), pathlib.Path(args.output)
    try:
        if src.suffix.lower() not in _READS:
            raise L.LinkageError(f"{src}: reads {sorted(_READS)} (a description or MJCF)")
        if dst.suffix.lower() not in _WRITES:
            raise L.LinkageError(f"{dst}: writes {sorted(_WRITES)}")
        lk = L.from_mjcf(src) if _READS[src.suffix.lower()] == "MJCF" else L.load(src)
        kind = _WRITES[dst.suffix.lower()]
        if kind == "description":
            lk.save(dst)
        elif kind == "MJCF":
            L.to_mjcf(lk, dst, softness=args.softness)
        else:
            motion = L.sweep(lk) if (kind == "CSV" or args.motion) else None
            {"DXF": L.to_dxf, "SVG": L.to_svg}.get(kind, lambda lk_, p, m: L.to_csv(m, p))(lk, dst, motion)
    except (L.LinkageError, OSError) as e:
        print(f"diffmech convert: {e}", file=sys.stderr)
        return 2
    print(f"diffmech convert: {src} ({_READS[src.suffix.lower()]}) -> {dst} ({kind})")
    return 0


def _no_cache_option(parser, default: bool | str = False) -> None:
    """`--no-cache` on the command and on every subcommand (before or after its name)."""
    parser.add_argument(
        "--no-cache",
        action="store_true",
        default=default,
        help="compile every program afresh (default: JAX's persistent compilation cache, diffmech.cache())",
    )
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        for sub in action.choices.values():
            _no_cache_option(sub, argparse.SUPPRESS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="diffmech", description="Differentiable closed-loop mechanisms.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="simulate the seed crank-rocker, print a summary, write plots")
    demo.add_argument("--out", default="demo_out", help="folder for the plots (default: demo_out)")
    demo.add_argument("--t1", type=_POSITIVE, default=5.0, help="simulated time of the dynamics cases (s; default 5)")
    demo.set_defaults(func=_demo)
    syn = sub.add_parser(
        "synthesize",
        help="four-bar synthesis: path generation from a CSV of target points, or "
        "path, motion or function generation with constraints from a problem file",
    )
    syn.add_argument(
        "target",
        help="CSV of target points: rows 'x, y', or 'x, y, crank angle' (rad) for prescribed "
        "timing; or a problem file (.toml or .json): task = 'path' | 'motion' | 'function', "
        "its data (targets; poses; theta_in and theta_out) and the keyword arguments of "
        "diffmech.synthesis (bounds, frame, phase, cyclic_order, grashof, transmission, ...)",
    )
    syn.add_argument(
        "--timing",
        choices=("free", "prescribed"),
        default=None,
        help="free: points in any order along the curve; prescribed: crank angles from the third column "
        "(or equal steps over a revolution). Default: prescribed with three columns, else free",
    )
    syn.add_argument("--full-rotation", action="store_true", help="require a crank that turns fully")
    syn.add_argument(
        "--starts", type=_POSITIVE_INT, default=None, help="multi-start batch size (default 16, or the file's)"
    )
    syn.add_argument(
        "--steps", type=_POSITIVE_INT, default=None, help="L-BFGS iterations per start (default 300, or the file's)"
    )
    syn.add_argument("--seed", type=_COUNT, default=None, help="random seed of the starts (default 0, or the file's)")
    syn.add_argument("--out", default="synthesis_out", help="folder for design.json and synthesis.png")
    syn.set_defaults(func=_synthesize)
    swp = sub.add_parser("sweep", help="crank sweeps of many four-bars from a file, across devices, resumable")
    swp.add_argument(
        "designs", help="DESIGNS.npz with 'lengths' (n × 4: crank, coupler, rocker, ground; optional 'branch' (n,) ±1)"
    )
    swp.add_argument(
        "--steps", type=_POSITIVE_INT, required=True, help="N crank angles over one revolution from 0 (2πk/N)"
    )
    swp.add_argument("--devices", default="all", help="'all' (default) or how many devices to spread the designs over")
    swp.add_argument("--per-device", type=_POSITIVE_INT, default=256, help="designs per device per chunk (default 256)")
    swp.add_argument("--float32", action="store_true", help="float32 throughput mode (default float64)")
    swp.add_argument(
        "--out",
        required=True,
        help="RESULT.npz: theta_A (N,), q (n × N × 6), converged (n × N); "
        "finished chunks are kept in RESULT.npz.chunks/ until it is written",
    )
    swp.set_defaults(func=_sweep)
    atl = sub.add_parser("atlas", help="the four-bar coupler-curve atlas that path synthesis matches targets against")
    atl_sub = atl.add_subparsers(dest="action", required=True)
    build = atl_sub.add_parser("build", help="build the atlas and cache it on disk (a few seconds)")
    build.add_argument("--size", type=_POSITIVE_INT, default=None, help="designs in the atlas (default 65536)")
    build.add_argument("--seed", type=_COUNT, default=0, help="seed of its quasi-random designs (default 0)")
    build.add_argument(
        "--out", default=None, help="file to write (default: the cache, $DIFFMECH_CACHE or ~/.cache/diffmech)"
    )
    build.set_defaults(func=_atlas_build)
    cnv = sub.add_parser(
        "convert",
        help="convert a linkage: description (.json/.toml) or MJCF (.xml) in; description, MJCF, DXF or SVG "
        "(planar) or CSV (its default motion) out, by the files' suffixes",
    )
    cnv.add_argument("input", help="the linkage: a description (.json, .toml) or a MuJoCo model (.xml, .mjcf)")
    cnv.add_argument("output", help="the file to write: .json, .toml, .xml/.mjcf, .dxf, .svg or .csv")
    cnv.add_argument("--softness", choices=("stiff", "default"), default="stiff", help="MJCF out: the loops' softness")
    cnv.add_argument("--motion", action="store_true", help="DXF/SVG out: draw the default motion's coupler curves")
    cnv.set_defaults(func=_convert)
    viw = sub.add_parser("view", help="show a linkage live in the browser: sliders for its inputs and its design")
    viw.add_argument("linkage", help="a bundled example's name, a description (.json, .toml), MJCF (.xml) or 'stewart'")
    viw.add_argument("--port", type=int, default=None, help="the port (default: a free one)")
    viw.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: this machine only)")
    viw.add_argument("--no-browser", action="store_true", help="do not open a browser")
    viw.set_defaults(func=_view)
    _no_cache_option(parser)
    args = parser.parse_args(argv)
    from . import _cache

    if not args.no_cache and _cache.enabled_for_cli():
        _cache.cache()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
