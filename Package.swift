// swift-tools-version: 6.0
//
// ObjectLog: an object-graph persistence framework for Swift on Linux.
//
// Layers, lowest first (nothing lower imports anything higher):
//   ObjectLogStore   bytes and files: header, records, CRC, reader/writer, recovery, index, compaction
//                    (CObjectLogStoreSupport: what Swift has no way to say: cache prefetch hints,
//                    the carry-less multiplication of the CRC)
//   ObjectLog        the object engine users link
//   ObjectLogPostgreSQL   the PostgreSQL store, through libpq (CLibPQ)
//   CommandLineKit   what both tools' command lines share: exit codes, errors, output streams
//                    that report failed writes, option scanning, help pages, JSON output and
//                    "did you mean"; it imports nothing of the package
//   ObjectLogTool    the `objectlog` commands, as a library; `objectlog` only calls it
//   ReactionDiffusion, Thumbnails   clients' libraries, which know nothing of storage
//   RDLab            the reaction-diffusion lab; `rdlab` only calls it
//
// System C libraries come in as system-library targets: zlib (CRC-32), libpng (thumbnails), libpq
// (the PostgreSQL store), SQLite (the benchmark's peer, and the reference of ObjectLogTests'
// differential test) and LMDB (the benchmark's second peer).

import PackageDescription

let package = Package(
    name: "ObjectLog",
    products: [
        .library(name: "ObjectLog", targets: ["ObjectLog"]),
        .library(name: "ObjectLogStore", targets: ["ObjectLogStore"]),
        .library(name: "ReactionDiffusion", targets: ["ReactionDiffusion"]),
        .library(name: "Thumbnails", targets: ["Thumbnails"]),
        .executable(name: "objectlog", targets: ["objectlog"]),
        .executable(name: "rdlab", targets: ["rdlab"]),
        .executable(name: "objectlog-bench", targets: ["objectlog-bench"]),
    ],
    targets: [
        // MARK: System libraries
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CPNG",
            path: "Sources/CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),

        // MARK: Storage
        // Cache prefetch hints, which Swift has no way to give.
        .target(name: "CObjectLogStoreSupport"),
        .target(name: "ObjectLogValues"),
        .target(
            name: "ObjectLogStore",
            dependencies: ["ObjectLogValues", "CZlib", "CObjectLogStoreSupport"]
        ),
        .target(name: "ObjectLog", dependencies: ["ObjectLogValues", "ObjectLogStore"]),
        // The PostgreSQL store, through libpq: its connection and its schema mapping.
        .target(name: "ObjectLogPostgreSQL", dependencies: ["ObjectLog", "ObjectLogStore", "CLibPQ"]),
        .target(name: "CommandLineKit"),
        .target(
            name: "ObjectLogTool",
            dependencies: ["ObjectLog", "ObjectLogStore", "ObjectLogPostgreSQL", "CommandLineKit"]
        ),
        .executableTarget(name: "objectlog", dependencies: ["ObjectLogTool"]),
        // The child process of the reliability tests (kills, races, readers during writes).
        .executableTarget(name: "objectlog-stress", dependencies: ["ObjectLog"]),

        // MARK: Clients
        .target(name: "CReactionDiffusionSupport"),
        // The solver's kernels are C, one per instruction set, all in every build and chosen at
        // run time from the processor's features: no build flags, so a binary runs at full speed
        // on any CPU of its architecture and the product can be a versioned dependency.
        .target(name: "ReactionDiffusion", dependencies: ["CReactionDiffusionSupport"]),
        .target(name: "CPNGSupport", dependencies: ["CPNG"]),
        .target(name: "Thumbnails", dependencies: ["CPNGSupport"]),
        .target(
            name: "RDLab",
            dependencies: [
                "ObjectLog", "ObjectLogPostgreSQL", "ReactionDiffusion", "Thumbnails",
                "CommandLineKit",
            ]
        ),
        .executableTarget(name: "rdlab", dependencies: ["RDLab"]),

        // MARK: Benchmarks
        .target(
            name: "CSolverPeer",
            path: "Benchmarks/CSolverPeer",
            // -O3 even in debug builds; the loop is compiled for each instruction set through
            // target attributes in the source, as -march=native would for each processor.
            cSettings: [.unsafeFlags(["-O3"])]
        ),
        .executableTarget(
            name: "objectlog-bench",
            dependencies: [
                "ObjectLog", "ObjectLogStore", "ReactionDiffusion", "Thumbnails", "CSQLite", "CLMDB",
                "CLibPQ", "CSolverPeer", "ObjectLogPostgreSQL",
            ],
            path: "Benchmarks/ObjectLogBench"
        ),

        // MARK: Fuzzing (tools/fuzz)
        .target(name: "FuzzTargets", dependencies: ["ObjectLogStore", "Thumbnails"], path: "Fuzz/FuzzTargets"),
        .executableTarget(name: "objectlog-fuzz", dependencies: ["FuzzTargets"], path: "Fuzz/objectlog-fuzz"),

        // MARK: Tests
        // Fixtures the test targets share: temporary directories and a seeded generator.
        .target(name: "TestSupport", dependencies: ["ObjectLogStore"], path: "Tests/TestSupport"),
        // The stores the engine's suites run on (the log file, memory, PostgreSQL), and the
        // throwaway PostgreSQL server they use.
        .target(
            name: "StoreTestSupport",
            dependencies: ["ObjectLog", "ObjectLogPostgreSQL", "TestSupport"],
            path: "Tests/StoreTestSupport"
        ),
        .testTarget(
            name: "ObjectLogStoreTests",
            dependencies: ["ObjectLogStore", "TestSupport"],
            exclude: ["Fixtures"]
        ),
        // SQLite is the differential test's reference (DifferentialTests.swift).
        .testTarget(
            name: "ObjectLogTests",
            dependencies: [
                "ObjectLog", "ObjectLogStore", "ObjectLogPostgreSQL", "TestSupport", "StoreTestSupport",
                "CSQLite",
            ]
        ),
        // Tests that need a server are skipped, with the reason, unless OBJECTLOG_TEST_POSTGRES_URL
        // names one (.ci/run starts one and requires them).
        .testTarget(
            name: "ObjectLogPostgreSQLTests",
            dependencies: ["ObjectLogPostgreSQL", "ObjectLog", "StoreTestSupport"]
        ),
        .testTarget(
            name: "ObjectLogToolTests",
            dependencies: [
                "ObjectLogTool", "CommandLineKit", "TestSupport", "StoreTestSupport",
                "ObjectLogPostgreSQL",
            ]
        ),
        .testTarget(name: "ReactionDiffusionTests", dependencies: ["ReactionDiffusion"]),
        .testTarget(name: "ThumbnailsTests", dependencies: ["Thumbnails", "TestSupport"]),
        .testTarget(
            name: "RDLabTests",
            dependencies: [
                "RDLab", "ReactionDiffusion", "Thumbnails", "TestSupport", "StoreTestSupport",
                "ObjectLogPostgreSQL",
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets"]),
        .testTarget(name: "ReliabilityTests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
