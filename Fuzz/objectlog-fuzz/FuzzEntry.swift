// objectlog-fuzz: the libFuzzer entry point (built by tools/fuzz with -sanitize=fuzzer and
// -DOBJECTLOG_FUZZING), or, in an ordinary build, a replayer of input files:
//
//   OBJECTLOG_FUZZ_TARGET=open objectlog-fuzz FILE…
//
// The target is one of: header, records, open, metadata, png.

import Foundation
import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif

private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["OBJECTLOG_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(
            Data(
                "error: set OBJECTLOG_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n"
                    .utf8
            )
        )
        exit(64)
    }
    return target
}()

#if OBJECTLOG_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    target.run(bytes)
    return 0
}
#else
@main
struct FuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count == 2, arguments[0] == "--write-seeds" {
            // Starts a corpus directory with the target's valid inputs.
            for (index, seed) in target.seeds().enumerated() {
                _ = FileManager.default.createFile(
                    atPath: arguments[1] + "/seed-\(index)",
                    contents: Data(seed)
                )
            }
            return
        }
        for path in arguments {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("error: cannot read \(path)\n".utf8))
                exit(66)
            }
            target.run([UInt8](data))
        }
    }
}
#endif
