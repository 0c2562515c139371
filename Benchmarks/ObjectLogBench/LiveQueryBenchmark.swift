import Dispatch
import Foundation
import ObjectLog
import Synchronization

// The live-query workload: 100 observed queries over N objects (1,000,000 by default) while
// 1,000 small saves run in another context; the saves' slowdown against the same saves with
// no one observing, and how long after each save began its observer was told.

/// The live-query benchmark's entity: a group (100 objects each) and a value to sort by.
final class LiveItem: ManagedObject {
    @Attribute var group = 0
    @Attribute var value = 0
}

/// When each save began, by save number, shared by the saving thread and the observers.
private final class SaveClock: Sendable {
    let starts: Mutex<[ContinuousClock.Instant?]>

    init(count: Int) { starts = Mutex(Array(repeating: nil, count: count)) }
}

/// The observed queries' context and what each query's elements told it.
private actor Observers {
    let context: ManagedObjectContext
    /// Per save number: how long after the save began an observer was told of it.
    var latencies: [Duration] = []
    var told: Set<Int> = []
    let base: Int

    init(coordinator: PersistentStoreCoordinator, base: Int) {
        context = ManagedObjectContext(coordinator: coordinator)
        self.base = base
    }

    /// Merges each save into the context, in order.
    func merge(_ saves: AsyncStream<ObjectChanges>) async {
        for await changes in saves { context.mergeChanges(from: changes) }
    }

    /// Observes the objects of `group` by value; returns once the first results are in.
    func observe(group: Int, clock: SaveClock) async {
        let request = FetchRequest<LiveItem>(
            predicate: #Predicate { $0.group == group },
            sortBy: [SortDescriptor(\.value)]
        )
        let (ready, readied) = AsyncStream<Void>.makeStream()
        Task {
            var first = true
            do {
                for try await results in context.observe(request) {
                    if first {
                        first = false
                        readied.yield()
                        readied.finish()
                        continue
                    }
                    let now = ContinuousClock.now
                    for index in results.updated {
                        let save = results.objects[index].value - base
                        guard save >= 0, told.insert(save).inserted,
                            let start = clock.starts.withLock({ $0[save] })
                        else { continue }
                        latencies.append(now - start)
                    }
                }
            } catch {
                print("error: \(error)")
            }
        }
        for await _ in ready {}
    }
}

func runLiveQueryBenchmark(arguments: [String]) {
    let objects = option("--scale", in: arguments).flatMap { Int($0) } ?? 1_000_000
    guard objects >= 20_000 else {
        print("error: --scale must be at least 20000")
        exit(64)
    }
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            try await liveQueryBenchmark(objects: objects)
        } catch {
            print("error: \(error)")
        }
        done.signal()
    }
    done.wait()
}

private func liveQueryBenchmark(objects: Int) async throws {
    let queries = 100
    let saves = 1_000
    let groups = objects / 100
    let directory = FileManager.default.temporaryDirectory.path + "/objectlog-live-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let container = try PersistentContainer(
        path: directory + "/live.objectlog",
        for: [LiveItem.self]
    )
    defer { try? container.close() }
    // Objects in `objects / 100` groups of 100; the targets of save `i` are in group
    // `i % 200`: half of the saves change an observed query's results, half change objects
    // that no query holds.
    let loading = container.newContext()
    var targets: [ObjectID] = Array(repeating: ObjectID(entityName: "", key: 0), count: saves)
    var byGroup: [Int: [ObjectID]] = [:]
    for index in 0..<objects {
        let item = LiveItem(context: loading)
        item.group = index % groups
        item.value = index
        if index % 100_000 == 99_999 { try loading.save() }
    }
    try loading.save()
    for item in try loading.fetch(
        FetchRequest<LiveItem>(predicate: #Predicate { $0.group < 200 })
    ) {
        byGroup[item.group, default: []].append(item.objectID)
    }
    for save in 0..<saves {
        let members = byGroup[save % 200] ?? []
        targets[save] = members[(save / 200) % members.count]
    }
    loading.reset()
    let saveTargets = targets
    print("live queries: \(objects) objects, \(queries) observed queries, \(saves) saves")

    /// Runs the saves, each setting one target's value; returns the seconds they took.
    @Sendable func runSaves(base: Int, clock: SaveClock) -> Double {
        let context = ManagedObjectContext(coordinator: container.coordinator)
        let start = ContinuousClock.now
        for save in 0..<saves {
            guard let item = try? context.existingObject(with: saveTargets[save]) as? LiveItem
            else {
                continue
            }
            clock.starts.withLock { $0[save] = .now }
            item.value = base + save
            try? context.save()
        }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    let alone = await Task.detached { runSaves(base: 10_000_000, clock: SaveClock(count: saves)) }
        .value

    let base = 20_000_000
    let clock = SaveClock(count: saves)
    let observers = Observers(coordinator: container.coordinator, base: base)
    let (stream, continuation) = AsyncStream<ObjectChanges>.makeStream()
    let token = container.coordinator.addSaveObserver { continuation.yield($0) }
    let merging = Task { await observers.merge(stream) }
    let fetchStart = ContinuousClock.now
    for group in 0..<queries { await observers.observe(group: group, clock: clock) }
    let fetched = ContinuousClock.now - fetchStart
    let observed = await Task.detached { runSaves(base: base, clock: clock) }.value
    // Every save to an observed group is told once; wait for the last of them.
    let expected = (0..<saves).filter { $0 % 200 < queries }.count
    let deadline = ContinuousClock.now + .seconds(60)
    while await observers.told.count < expected, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
    container.coordinator.removeObserver(token)
    continuation.finish()
    await merging.value
    let latencies = await observers.latencies.sorted()
    func milliseconds(_ duration: Duration) -> String {
        let value =
            Double(duration.components.seconds) * 1e3
            + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.3f ms", value)
    }
    print("  first results of \(queries) queries: \(milliseconds(fetched))")
    print(String(format: "  %d saves alone:          %.3f s", saves, alone))
    print(String(format: "  %d saves, %d observers: %.3f s", saves, queries, observed))
    print(String(format: "  slowdown:                 %.2fx", observed / alone))
    print("  observers told: \(latencies.count) of \(expected) relevant saves")
    if !latencies.isEmpty {
        let median = latencies[latencies.count / 2]
        let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        print("  latency from save start: median \(milliseconds(median)), p99 \(milliseconds(p99))")
    }
}
