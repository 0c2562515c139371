import Foundation

/// What the benchmark says about the processor it ran on, so that every figure names its CPU.
enum MachineDescription {
    /// The first `model name` of /proc/cpuinfo, or "unknown".
    static var cpuModel: String {
        field("model name") ?? "unknown"
    }

    /// The vector features among the processor's flags (x86's `flags`, AArch64's `Features`),
    /// in the order they are listed, or "unknown".
    static var vectorFeatures: String {
        guard let flags = field("flags") ?? field("Features") else { return "unknown" }
        let interesting = flags.split(separator: " ").filter { flag in
            flag.hasPrefix("sse") || flag.hasPrefix("avx") || flag == "fma" || flag == "asimd"
                || flag == "ssse3"
        }
        return interesting.isEmpty ? "none listed" : interesting.joined(separator: " ")
    }

    /// The value of the first line of /proc/cpuinfo whose key is `key`.
    private static func field(_ key: String) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else {
            return nil
        }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == key {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}
