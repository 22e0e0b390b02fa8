"""The evaluation's report: win-rate matrices per metric (CSV, and heatmaps in the style of the
paper's Figure 4), context tokens per condition in the style of its Table 3, claim metrics,
and a Markdown summary that links them."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from statistics import mean

from graphrag_ray.eval.judge import order_effect, win_rates


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}"


def heatmap(matrix: dict[str, dict[str, float | None]], conditions: list[str], title: str,
            path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.array([[np.nan if matrix[r][c] is None else 100 * matrix[r][c]
                        for c in conditions] for r in conditions])
    figure, axes = plt.subplots(figsize=(1.1 * len(conditions) + 1.5, len(conditions) + 0.8))
    image = axes.imshow(values, cmap="RdYlGn", vmin=0, vmax=100)
    axes.set_xticks(range(len(conditions)), conditions)
    axes.set_yticks(range(len(conditions)), conditions)
    axes.set_xlabel("against")
    axes.set_ylabel("win rate of")
    axes.set_title(title)
    for i in range(len(conditions)):
        for j in range(len(conditions)):
            if not np.isnan(values[i, j]):
                axes.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.046)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_report(out: Path, answers: list[dict], judgments: list[dict], claims: list[dict],
                 conditions: list[str], metrics: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    lines = ["# Evaluation report", ""]
    questions = sorted({a["question_id"] for a in answers})
    lines += [f"{len(questions)} questions; conditions {', '.join(conditions)}.", ""]
    lines += _context_tokens_section(out, answers, conditions, written)
    if judgments:
        lines += _win_rates_section(out, judgments, conditions, metrics, written)
    if claims:
        lines += _claims_section(out, claims, conditions, written)
    (out / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    written.append(out / "summary.md")
    return written


def _context_tokens_section(out: Path, answers: list[dict], conditions: list[str],
                            written: list[Path]) -> list[str]:
    """Context tokens per condition, as a share of TS (the paper's Table 3)."""
    lines: list[str] = []
    by_condition: dict[str, list[dict]] = defaultdict(list)
    for answer in answers:
        by_condition[answer["condition"]].append(answer)
    ts_total = sum(a["context_tokens"] for a in by_condition.get("TS", [])) or None
    rows = []
    for condition in conditions:
        items = by_condition.get(condition, [])
        if not items:
            continue
        total = sum(a["context_tokens"] for a in items)
        rows.append([condition, len(items), round(mean(a["context_tokens"] for a in items)),
                     total, f"{100 * total / ts_total:.1f}" if ts_total else "",
                     round(mean(a["llm_calls"] for a in items), 1),
                     round(mean(a["wall_s"] for a in items), 2)])
    header = ["condition", "answers", "context tokens per question", "total context tokens",
              "% of TS", "LLM calls per question", "seconds per question"]
    _write_csv(out / "context_tokens.csv", header, rows)
    written.append(out / "context_tokens.csv")
    lines += ["## Context tokens (as in the paper's Table 3)", "",
              "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows] + [""]
    return lines


def _win_rates_section(out: Path, judgments: list[dict], conditions: list[str],
                       metrics: list[str], written: list[Path]) -> list[str]:
    """Win rates per metric (the paper's Figure 4), with the order effect."""
    lines: list[str] = []
    matrices = win_rates(judgments, conditions, metrics)
    failed = sum(1 for j in judgments if j.get("winner") is None)
    lines += ["## Head-to-head win rates (as in the paper's Figure 4)", "",
              f"{len(judgments)} judgements ({failed} unreadable, left out). A cell is the "
              "percentage of comparisons the row condition won against the column "
              "condition (ties count half).", ""]
    effect = order_effect(judgments)
    if effect["first_shown_won"] is not None:
        lines += [f"Order effect: the answer shown first won "
                  f"{100 * effect['first_shown_won']:.1f}% of {effect['decided']} decided "
                  f"verdicts (50% means none); each pair's first condition was shown first "
                  f"{effect['a_shown_first']} times and second {effect['b_shown_first']} "
                  "times, so the effect cancels out of the win rates.", ""]
    for metric in metrics:
        matrix = matrices[metric]
        csv_path, png_path = out / f"win_rates_{metric}.csv", out / f"win_rates_{metric}.png"
        _write_csv(csv_path, ["condition", *conditions],
                   [[r, *[_percent(matrix[r][c]) for c in conditions]] for r in conditions])
        heatmap(matrix, conditions, metric.capitalize(), png_path)
        written += [csv_path, png_path]
        lines += [f"### {metric.capitalize()}", "", f"![{metric}]({png_path.name})", "",
                  "| | " + " | ".join(conditions) + " |", "|" + "---|" * (len(conditions) + 1)]
        lines += ["| " + r + " | " + " | ".join(_percent(matrix[r][c]) for c in conditions)
                  + " |" for r in conditions] + [""]
    return lines


def _claims_section(out: Path, claims: list[dict], conditions: list[str],
                    written: list[Path]) -> list[str]:
    """Comprehensiveness and diversity by condition, from the answers' claims."""
    lines: list[str] = []
    thresholds = sorted({t for c in claims for t in c["diversity"]}, key=float)
    rows = []
    for condition in conditions:
        # An answer whose claims could not be read counts as unmeasured, not as 0 claims.
        items = [c for c in claims if c["condition"] == condition and not c.get("error")]
        if items:
            rows.append([condition, len(items),
                         round(mean(c["comprehensiveness"] for c in items), 2),
                         *[round(mean(c["diversity"][t] for c in items), 2)
                           for t in thresholds]])
    header = ["condition", "answers", "distinct claims (comprehensiveness)",
              *[f"clusters at distance {t} (diversity)" for t in thresholds]]
    _write_csv(out / "claims.csv", header, rows)
    written.append(out / "claims.csv")
    unread = sum(1 for c in claims if c.get("error"))
    lines += ["## Claim metrics", "",
              f"{len(claims)} answers measured ({unread} whose claims could not be read, "
              "left out).", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows] + [""]
    return lines
