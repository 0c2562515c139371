import Foundation
import ReactionDiffusion

/// Steps a simulation in chunks so that Ctrl-C is noticed within a fraction of a second, and
/// shows a progress bar with steps per second when standard error is a terminal.
///
/// Chunking does not change results: `step(count: a)` then `step(count: b)` computes exactly what
/// `step(count: a + b)` does.
struct SteppingLoop {
    /// The time a chunk of steps aims to take.
    static let chunkSeconds = 0.1

    /// Whether to draw the progress bar.
    var showsProgress = isatty(STDERR_FILENO) == 1
    /// The text before the bar, such as the model's name.
    var label: String

    /// Takes `steps` steps and returns the seconds spent.
    ///
    /// - Throws: ``CommandError`` (interrupted, exit 130) when Ctrl-C was pressed; the simulation
    ///   then holds a state part-way.
    func run(_ simulation: Simulation, steps: Int) throws(CommandError) -> Double {
        Interruption.install()
        let clock = ContinuousClock()
        let start = clock.now
        var done = 0
        var chunk = 1
        var lastDrawn = start
        while done < steps {
            if Interruption.isRequested {
                clearBar()
                throw Interruption.error(afterSteps: done)
            }
            let count = min(chunk, steps - done)
            let chunkStart = clock.now
            simulation.step(count: count)
            done += count
            let chunkTime = seconds(chunkStart.duration(to: clock.now))
            if chunkTime < Self.chunkSeconds / 2 && chunk < 1 << 20 {
                chunk *= 2
            } else if chunkTime > Self.chunkSeconds * 2 && chunk > 1 {
                chunk /= 2
            }
            if showsProgress && seconds(lastDrawn.duration(to: clock.now)) >= 0.1 {
                lastDrawn = clock.now
                draw(done: done, of: steps, elapsed: seconds(start.duration(to: clock.now)))
            }
        }
        if Interruption.isRequested {
            clearBar()
            throw Interruption.error(afterSteps: done)
        }
        clearBar()
        return seconds(start.duration(to: clock.now))
    }

    private func draw(done: Int, of steps: Int, elapsed: Double) {
        let width = 30
        let filled = steps > 0 ? width * done / steps : width
        let bar =
            String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let text = String(
            format: "\r%@ [%@] %d/%d steps  %.0f steps/s ",
            label,
            bar,
            done,
            steps,
            rate
        )
        FileHandle.standardError.write(Data(text.utf8))
    }

    private func clearBar() {
        guard showsProgress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
