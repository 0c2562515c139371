import CommandLineKit
import Foundation
import ReactionDiffusion

/// Steps a simulation in chunks so that Ctrl-C is noticed within a fraction of a second, and
/// shows a progress bar with steps per second and the time left when standard error is a
/// terminal, fitted to the terminal's width.
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
        let text = Self.progressLine(
            label: label,
            done: done,
            of: steps,
            elapsed: elapsed,
            columns: Self.terminalColumns()
        )
        FileHandle.standardError.write(Data(("\r" + text + "\u{1B}[K").utf8))
    }

    /// The progress line: the label, a bar, the steps done, the rate and the estimated time
    /// left, fitted to `columns` (the bar shrinks first, then the label goes, then the rate), and
    /// never wrapping: it is one column narrower than the terminal.
    static func progressLine(
        label: String,
        done: Int,
        of steps: Int,
        elapsed: Double,
        columns: Int
    ) -> String {
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let remaining = rate > 0 ? Double(steps - done) / rate : nil
        let counts = "\(done)/\(steps) steps"
        let rateText = String(format: "%.0f steps/s", rate)
        let eta = "ETA " + (remaining.map(duration) ?? "--:--")
        let room = max(columns - 1, 10)
        func line(label: String?, rate: Bool, barWidth: Int) -> String {
            var parts: [String] = []
            if let label { parts.append(label) }
            if barWidth > 0 {
                let filled = steps > 0 ? barWidth * done / steps : barWidth
                parts.append(
                    "[" + String(repeating: "#", count: filled)
                        + String(repeating: " ", count: barWidth - filled) + "]"
                )
            }
            parts.append(counts)
            if rate { parts.append(rateText) }
            parts.append(eta)
            return parts.joined(separator: " ")
        }
        // The widest bar (up to 40) that fits with everything, then without the label, then
        // without the rate; at last no bar at all, cut to the room there is.
        for (shownLabel, showsRate) in [(label, true), (nil, true), (nil, false)]
            as [(String?, Bool)]
        {
            let fixed = line(label: shownLabel, rate: showsRate, barWidth: 0).count + 3
            let barWidth = min(40, room - fixed)
            if barWidth >= 10 {
                return line(label: shownLabel, rate: showsRate, barWidth: barWidth)
            }
        }
        return String(line(label: nil, rate: false, barWidth: 0).prefix(room))
    }

    /// Seconds as `m:ss`, or `h:mm:ss` from an hour.
    static func duration(_ seconds: Double) -> String {
        let total = Int(min(seconds, 359_999).rounded(.up))
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0
            ? String(format: "%d:%02d:%02d", hours, minutes, secs)
            : String(format: "%d:%02d", minutes, secs)
    }

    /// The terminal's width: the `TIOCGWINSZ` size of standard error, else `$COLUMNS`, else 80.
    static func terminalColumns() -> Int {
        var size = winsize()
        // See: man 2 ioctl_tty. A pseudo-terminal nobody sized reports 0 columns.
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text),
            columns > 0
        {
            return columns
        }
        return 80
    }

    private func clearBar() {
        guard showsProgress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
