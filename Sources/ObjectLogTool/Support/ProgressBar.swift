import CommandLineKit

/// A one-line progress bar for long operations, drawn only on a terminal and only once the
/// operation has taken longer than a delay (one second), so short runs and pipes see nothing.
final class ProgressBar {
    private let output: TextOutput
    private let isEnabled: Bool
    private let start: ContinuousClock.Instant
    private let delay: Duration
    private let width: Int
    /// Whether the bar has been drawn (and must be cleared when done).
    private(set) var isShowing = false

    /// Creates a bar.
    ///
    /// - Parameters:
    ///   - output: Where to draw it.
    ///   - isTerminal: Whether `output` is a terminal; when not, the bar never draws.
    ///   - start: When the operation began.
    ///   - delay: How long the operation must run before the bar appears.
    ///   - width: The number of cells in the bar.
    init(
        output: TextOutput,
        isTerminal: Bool,
        start: ContinuousClock.Instant = .now,
        delay: Duration = .seconds(1),
        width: Int = 40
    ) {
        self.output = output
        self.isEnabled = isTerminal
        self.start = start
        self.delay = delay
        self.width = width
    }

    /// Reports `fraction` (0 to 1) done at time `now`; draws the bar when it should show.
    func update(_ fraction: Double, now: ContinuousClock.Instant = .now) {
        guard isEnabled, now - start >= delay else { return }
        let clamped = min(max(fraction, 0), 1)
        let filled = Int((clamped * Double(width)).rounded(.down))
        let bar =
            String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = Formatting.leftPadded(String(Int((clamped * 100).rounded(.down))), 3)
        output.write("\r[\(bar)] \(percent)%")
        output.flush()
        isShowing = true
    }

    /// Clears the bar's line if it was drawn.
    func finish() {
        guard isShowing else { return }
        output.write("\r" + String(repeating: " ", count: width + 7) + "\r")
        output.flush()
        isShowing = false
    }
}
