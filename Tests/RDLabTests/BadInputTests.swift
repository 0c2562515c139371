import Foundation
import ReactionDiffusion
import TestSupport
import Testing

@Suite("rdlab refuses bad input with one error line and a sysexits status")
struct BadInputTests {
    @Test(
        "usage errors exit 64 with a one-line message",
        arguments: [
            (
                [],
                "error: missing '--model'; use gray-scott, fitzhugh-nagumo or belousov-zhabotinsky (or set a default with 'rdlab settings set default-model <model>')"
            ),
            (
                ["--model", "brusselator"],
                "error: unknown value 'brusselator' for '--model'; use gray-scott, fitzhugh-nagumo or belousov-zhabotinsky"
            ),
            (
                ["--model", "gray-scott", "--preset", "Liquid"],
                "error: gray-scott has no preset 'Liquid'; its presets are Default, Worms, Spots, Strings, Bifurcation"
            ),
            (
                ["--model", "gray-scott", "--set", "du=0.3"],
                "error: du = 0.3 is outside [0.0, 0.25] (diffusion rates above 0.25 make the explicit step unstable); pass --force to run anyway"
            ),
            (["--model", "gray-scott", "--set", "feed=0.1"], "error: unknown parameter 'feed'"),
            (["--model", "gray-scott", "--set", "f"], "error: '--set' needs name=value, not 'f'"),
            (
                ["--model", "gray-scott", "--set", "f=fast"],
                "error: '--set f' needs a finite number, not 'fast'"
            ),
            (
                ["--model", "gray-scott", "--set", "f=nan", "--force"],
                "error: '--set f' needs a finite number, not 'nan'"
            ),
            (
                ["--model", "gray-scott", "--size", "0"],
                "error: '--size' must be between 1 and 8192, not 0"
            ),
            (
                ["--model", "gray-scott", "--size", "8", "--width", "8", "--height", "8"],
                "error: use either '--size' or '--width' and '--height', not both"
            ),
            (
                ["--model", "gray-scott", "--width", "8"],
                "error: '--width' and '--height' go together"
            ),
            (
                ["--model", "gray-scott", "--steps", "-1"],
                "error: '--steps' must be between 0 and 1000000000, not -1"
            ),
            (["--model", "gray-scott", "--steps"], "error: missing value for '--steps'"),
            (
                ["--model", "gray-scott", "--threads", "many"],
                "error: '--threads' needs an integer, not 'many'"
            ),
            (
                ["--model", "gray-scott", "--precision", "float64"],
                "error: unknown value 'float64' for '--precision' (did you mean 'float32'?); use unorm8 or float32"
            ),
            (
                ["--model", "gray-scott", "--unorm8-rule", "3"],
                "error: unknown value '3' for '--unorm8-rule'; use 1 (the original's 8-bit rounding) or 2 (the default)"
            ),
            (
                ["--model", "gray-scott", "--unorm8-rule", "1", "--unorm8-rule", "2"],
                "error: '--unorm8-rule' is given more than once"
            ),
            (
                ["--model", "gray-scott", "--boundary", "mirror"],
                "error: unknown value 'mirror' for '--boundary'; use zero or periodic"
            ),
            (
                ["--model", "gray-scott", "--bogus"],
                "error: unknown option '--bogus'; see 'rdlab run --help'"
            ),
            (
                ["--model", "gray-scott", "extra"],
                "error: unexpected argument 'extra'; see 'rdlab run --help'"
            ),
            (
                ["--model", "gray-scott", "--model", "gray-scott"],
                "error: '--model' is given more than once"
            ),
            (
                ["--model", "gray-scott", "--no-save=yes"],
                "error: '--no-save' takes no value (got 'yes')"
            ),
        ]
    )
    func usage(arguments: [String], message: String) throws {
        let result = try RDLabProcess.run(["run"] + arguments)
        #expect(result.exitCode == 64)
        #expect(result.standardOutput == "")
        #expect(result.errorLines.count == 1)
        #expect(result.errorLines.first?.hasPrefix(message) == true, "\(result.standardError)")
    }

    @Test("an unknown command exits 64")
    func unknownCommand() throws {
        let result = try RDLabProcess.run(["simulate"])
        #expect(result.exitCode == 64)
        #expect(
            result.standardError
                == "error: unknown command 'simulate'; use one of run, resume, list, show, edit, "
                + "history, revert, rename, delete, undelete, presets, browse, settings, demo, or "
                + "see 'rdlab --help'\n"
        )
    }

    @Test("a missing --init file exits 66; a damaged or mismatched one exits 65")
    func initFiles() throws {
        let directory = TemporaryDirectory()
        let missing = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--init", directory.file("none.npy"),
        ])
        #expect(missing.exitCode == 66)
        #expect(
            missing.errorLines == [
                "error: cannot read '\(directory.file("none.npy"))': no such file or not readable"
            ]
        )

        try Data("not numpy at all".utf8).write(
            to: URL(fileURLWithPath: directory.file("junk.npy"))
        )
        let junk = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--init", directory.file("junk.npy"),
        ])
        #expect(junk.exitCode == 65)
        #expect(junk.errorLines.count == 1)
        #expect(
            junk.errorLines.first?.hasPrefix(
                "error: '\(directory.file("junk.npy"))': not a NumPy .npy file"
            ) == true
        )

        try NumPyFormat.write(
            Field(chemicalCount: 3, width: 4, height: 4, repeating: 0.5),
            to: directory.file("bz.npy")
        )
        let mismatch = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--init", directory.file("bz.npy"),
        ])
        #expect(mismatch.exitCode == 65)
        #expect(
            mismatch.errorLines == [
                "error: '\(directory.file("bz.npy"))' has 3 chemical(s); gray-scott needs 2 (u, v)"
            ]
        )

        let size = try RDLabProcess.run([
            "run", "--model", "belousov-zhabotinsky", "--init", directory.file("bz.npy"), "--size",
            "5",
        ])
        #expect(size.exitCode == 64)
        #expect(
            size.errorLines == [
                "error: '\(directory.file("bz.npy"))' is 4 × 4, not the 5 × 5 of '--size'"
            ]
        )

        var nan = Field(chemicalCount: 2, width: 3, height: 2, repeating: 0)
        nan[1, 1, 2] = .nan
        try NumPyFormat.write(nan, to: directory.file("nan.npy"))
        let notFinite = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--init", directory.file("nan.npy"),
        ])
        #expect(notFinite.exitCode == 65)
        #expect(
            notFinite.errorLines == [
                "error: '\(directory.file("nan.npy"))' holds a value that is not a finite number (chemical 1, row 1, column 2)"
            ]
        )
    }

    @Test("a --png path that cannot be written exits 73")
    func unwritablePicture() throws {
        let path = "/nonexistent-directory-for-rdlab/out.png"
        let result = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--png", path,
            "--no-save",
        ])
        #expect(result.exitCode == 73)
        #expect(result.errorLines.count == 1)
        #expect(result.errorLines.first?.hasPrefix("error: cannot write '\(path)': ") == true)
    }

    @Test("an --npy path that cannot be written exits 73")
    func unwritableOutput() throws {
        let path = "/nonexistent-directory-for-rdlab/out.npy"
        let result = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--npy", path,
            "--no-save",
        ])
        #expect(result.exitCode == 73)
        #expect(result.errorLines.count == 1)
        #expect(
            result.errorLines.first?.hasPrefix("error: cannot write '\(path)': ") == true,
            "\(result.standardError)"
        )
    }
}
