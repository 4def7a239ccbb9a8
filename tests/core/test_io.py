"""lab.core.io.quiet_stdout: a compiled library's own prints to file descriptor 1 do not reach the output."""

import os

from lab.core.io import quiet_stdout


def test_quiet_stdout_silences_writes_to_descriptor_1_and_nothing_after(capfd):
    with quiet_stdout():
        os.write(1, b"HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\n")
    os.write(1, b"kept\n")
    assert capfd.readouterr().out == "kept\n"
