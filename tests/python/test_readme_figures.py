"""scripts/readme_figures.py (issue 27): README's figures are what the raw outputs in
results/generated/ say. A figure edited by hand fails --check and a rewrite puts the raw
output's back; a README without the markers is an error, not a table appended somewhere."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def figures(readme, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_figures.py"), "--readme", str(readme),
                           *args], capture_output=True, text=True)


def test_a_figure_edited_by_hand_fails_the_check_and_a_rewrite_restores_it(tmp_path):
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    assert figures(readme, "--check").returncode == 0
    original = readme.read_text()
    lines = original.splitlines(keepends=True)
    begin = next(i for i, line in enumerate(lines) if line.startswith("<!-- figures: made"))
    first_row = next(i for i in range(begin, len(lines)) if lines[i].startswith("|---|")) + 1
    cells = lines[first_row].split("|")
    cells[2] = " 195 GFLOP/s "  # the value column of the first figure
    lines[first_row] = "|".join(cells)
    readme.write_text("".join(lines))

    check = figures(readme, "--check")
    assert check.returncode == 1
    assert "differ" in check.stderr
    assert figures(readme).returncode == 0
    assert readme.read_text() == original


def test_a_readme_without_the_markers_is_an_error(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# pto-tune\n\n## Figures\n")
    result = figures(readme)
    assert result.returncode == 1
    assert "markers" in result.stderr
    assert readme.read_text() == "# pto-tune\n\n## Figures\n"
