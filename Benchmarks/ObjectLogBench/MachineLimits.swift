import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Raw limits of this machine, measured in the same run as the workloads they bound.
enum MachineLimits {
    /// Appends of 100 bytes to one file, each followed by `fdatasync`.
    ///
    /// The machine's limit for a durable small save. One file serves all the calls to
    /// ``latencies(count:)``, so that the benchmark can interleave them with the engines'
    /// saves.
    final class AppendSync {
        private let path: String
        private let descriptor: Int32
        private let bytes = [UInt8](repeating: 0x5A, count: 100)

        init(directory: String) {
            path = directory + "/raw-append.bin"
            descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0o600)
            precondition(descriptor >= 0, "cannot create \(path)")
        }

        deinit {
            close(descriptor)
            unlink(path)
        }

        /// Latencies (seconds) of `count` appends, each followed by `fdatasync`.
        func latencies(count: Int) -> [Double] {
            var latencies: [Double] = []
            latencies.reserveCapacity(count)
            for _ in 0..<count {
                latencies.append(
                    measure {
                        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                        fdatasync(descriptor)
                    }
                )
            }
            return latencies
        }
    }

    /// Sequential write bandwidth in bytes per second: `megabytes` written in 8 MiB writes, then
    /// one `fdatasync`.
    static func sequentialWriteBandwidth(directory: String, megabytes: Int) -> Double {
        let path = directory + "/raw-sequential.bin"
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        precondition(descriptor >= 0, "cannot create \(path)")
        defer {
            close(descriptor)
            unlink(path)
        }
        let chunk = [UInt8](repeating: 0xA5, count: 8 << 20)
        let total = max(1, megabytes / 8)
        let seconds = measure {
            for _ in 0..<total {
                _ = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            }
            fdatasync(descriptor)
        }
        return Double(total * chunk.count) / seconds
    }

    /// Peak resident set size of this process so far, in bytes (`VmHWM` in /proc/self/status).
    ///
    /// Not `getrusage`: Linux carries `ru_maxrss` across `execve`, so a child started by a large
    /// parent would report the parent's peak.
    static func peakResidentBytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
            return 0
        }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let digits = line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces).split(
                separator: " "
            ).first
            return (digits.flatMap { Double($0) } ?? 0) * 1024
        }
        return 0
    }
}
