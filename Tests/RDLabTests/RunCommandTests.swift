import Foundation
import ReactionDiffusion
import TestSupport
import Testing
import Thumbnails

@Suite("rdlab run, end to end")
struct RunCommandTests {
    @Test(
        "run --no-save --npy writes the same state as the library computes",
        arguments: Model.allCases
    )
    func writesState(model: Model) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("out.npy")
        let result = try RDLabProcess.run([
            "run", "--model", model.name, "--width", "40", "--height", "24", "--steps", "30",
            "--threads", "3", "--no-save", "--npy", path,
        ])
        #expect(result.exitCode == 0)
        #expect(result.standardError == "")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.hasPrefix(
                "\(model.name), 40 × 24, 30 steps, unorm8, zero boundary, 3 threads, "
                    + "\(SolverKernel.best) kernel: "
            ) == true
        )
        #expect(lines.count == 1 + model.chemicalCount + 1)
        #expect(lines.last == "wrote \(path)")

        let written = try NumPyFormat.read(contentsOf: path)
        let simulation = Simulation(
            model: model,
            parameters: model.defaultParameters,
            field: InitialState.make(
                for: model,
                width: 40,
                height: 24,
                seed: InitialState.defaultSeed
            )
        )
        simulation.step(count: 30)
        #expect(written == simulation.field)
        #expect(written.values.allSatisfy { Float(($0 * 255).rounded()) / 255 == $0 })
    }

    @Test("--preset, --set, --precision and --boundary reach the solver")
    func options() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("out.npy")
        let result = try RDLabProcess.run([
            "run", "--model", "fitzhugh-nagumo", "--preset", "spiralcoral", "--set", "k1=1.5",
            "--set", "DELTA=3", "--size", "20", "--steps", "12", "--precision", "float32",
            "--boundary", "periodic", "--npy=\(path)", "--no-save",
        ])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(
            result.standardOutput.hasPrefix(
                "fitzhugh-nagumo (SpiralCoral), 20 × 20, 12 steps, float32, periodic"
            )
        )
        var parameters = Preset.named("SpiralCoral", for: .fitzHughNagumo)!.parameters
        parameters.k1 = 1.5
        parameters.delta = 3
        let simulation = Simulation(
            model: .fitzHughNagumo,
            parameters: parameters,
            precision: .float32,
            boundary: .periodic,
            field: InitialState.make(
                for: .fitzHughNagumo,
                width: 20,
                height: 20,
                seed: InitialState.defaultSeed
            )
        )
        simulation.step(count: 12)
        #expect(try NumPyFormat.read(contentsOf: path) == simulation.field)
    }

    @Test("--init replaces the seed; in unorm8 it is rounded to k/255 first")
    func initialState() throws {
        let directory = TemporaryDirectory()
        var generator = ReactionDiffusion.SeededGenerator(seed: 99)
        var field = Field(chemicalCount: 3, width: 9, height: 6, repeating: 0)
        for i in field.values.indices {
            field.values[i] = generator.nextUnitFloat() * 1.4 - 0.2
        }
        try NumPyFormat.write(field, to: directory.file("in.npy"))
        for precision in Precision.allCases {
            let out = directory.file("out-\(precision).npy")
            let result = try RDLabProcess.run([
                "run", "--model", "belousov-zhabotinsky", "--init", directory.file("in.npy"),
                "--steps", "0", "--precision", precision.rawValue, "--npy", out, "--no-save",
            ])
            #expect(result.exitCode == 0, "\(result.standardError)")
            #expect(result.standardOutput.hasPrefix("belousov-zhabotinsky, 9 × 6, 0 steps"))
            let expected = precision == .unorm8 ? field.quantizedToUnorm8() : field
            #expect(try NumPyFormat.read(contentsOf: out) == expected)
        }
    }

    @Test(
        "--png draws the final state, one pixel per cell, in the original's colours",
        arguments: Model.allCases
    )
    func picture(model: Model) throws {
        let directory = TemporaryDirectory()
        let result = try RDLabProcess.run([
            "run", "--model", model.name, "--width", "30", "--height", "20", "--steps", "25",
            "--npy", directory.file("out.npy"), "--png", directory.file("out.png"), "--no-save",
        ])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasSuffix("wrote \(directory.file("out.png"))\n"))
        let field = try NumPyFormat.read(contentsOf: directory.file("out.npy"))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("out.png"))))
        let picture = try Image(pngBytes: bytes)
        #expect(picture.width == 30 && picture.height == 20)
        for (y, x) in [(0, 0), (10, 15), (19, 29), (7, 3)] {
            let channels = model.chemicalCount == 3 ? [0, 1, 2] : [0, 0, 1]
            // unorm8 values are exactly k/255, so each channel is exactly k.
            let expected = channels.map { UInt8((field[$0, y, x] * 255).rounded()) }
            #expect(Array(picture.pixel(x: x, y: y).prefix(3)) == expected, "(\(x), \(y))")
        }
    }

    @Test("without --no-save the run is saved as the automatic save, in RDLAB_STORE")
    func autosaved() throws {
        let directory = TemporaryDirectory()
        let store = directory.file("env.olog")
        let result = try RDLabProcess.run(
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "3"],
            environment: ["RDLAB_STORE": store]
        )
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardError == "")
        let list = try RDLabProcess.run(["list", "--store", store])
        #expect(list.exitCode == 0)
        #expect(list.lines.count == 2)
        #expect(list.lines.last?.hasPrefix("autosave (last run)  gray-scott  -       8×8") == true)
    }

    @Test("--force runs parameters outside the stable range")
    func force() throws {
        let result = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--set", "du=0.3", "--force", "--size", "8", "--steps",
            "2",
            "--no-save",
        ])
        #expect(result.exitCode == 0, "\(result.standardError)")
    }

    @Test("run --help has the OVERVIEW, USAGE and OPTIONS layout and lists every flag")
    func help() throws {
        let result = try RDLabProcess.run(["run", "--help"])
        #expect(result.exitCode == 0)
        let text = result.standardOutput
        #expect(
            text.hasPrefix(
                "OVERVIEW: Run a reaction-diffusion model and write its final state.\n\nUSAGE: rdlab run --model <model>"
            )
        )
        #expect(text.contains("\n\nOPTIONS:\n  --model <model>"))
        for flag in [
            "--preset", "--set", "--size", "--width", "--height", "--steps", "--threads",
            "--precision", "--unorm8-rule",
            "--boundary", "--init", "--npy", "--png", "--save", "--replace", "--no-save", "--force",
            "--store", "-h, --help",
        ] {
            #expect(text.contains("\n  \(flag)"), "\(flag)")
        }
        let top = try RDLabProcess.run(["--help"])
        #expect(top.exitCode == 0)
        #expect(top.standardOutput.contains("SUBCOMMANDS:\n  run "))
        #expect(try RDLabProcess.run(["help", "run"]).standardOutput == text)
    }
}
