import CommandLineKit
import Foundation
import Synchronization

/// Ctrl-C during a run: a `SIGINT` handler that only sets a flag, which the stepping loop checks
/// between chunks of steps so that it can stop without saving anything half-done.
enum Interruption {
    private static let requested = Atomic<Bool>(false)

    /// Installs the handler (idempotent).
    static func install() {
        // A process may start with SIGINT blocked (the mask survives exec; some test runners
        // and job controllers block it), which would make Ctrl-C do nothing at all.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        // The handler may only do async-signal-safe work: a lock-free atomic store is.
        // See: man 7 signal-safety.
        signal(SIGINT) { _ in
            Interruption.requested.store(true, ordering: .relaxed)
        }
    }

    /// Whether Ctrl-C has been pressed since ``install()``.
    static var isRequested: Bool {
        requested.load(ordering: .relaxed)
    }

    /// The error a command stops with after Ctrl-C.
    static func error(afterSteps steps: Int) -> CommandError {
        CommandError(
            "interrupted after \(steps) step\(steps == 1 ? "" : "s"); nothing was saved",
            exitCode: .interrupted
        )
    }
}
