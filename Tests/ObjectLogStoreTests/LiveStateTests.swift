import Foundation
import Testing

@testable import ObjectLogStore

@Suite("Live state")
struct LiveStateTests {
    @Test("a new store's state starts after its header, and an open finds the same")
    func freshState() throws {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/f.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        let header = store.locked { store.state.header }
        let state = LiveState(header: header)
        #expect(state.endOffset == UInt64(header.length))
        #expect(state.nextKey >= 1 && state.lastNumber == header.baseTransactionCount)
        #expect(state.live.count == 0 && state.liveRecordBytes == 0)
        #expect(state.liveLength == UInt64(header.length + header.layout.commitRecordLength))
        #expect(store.locked { store.state.endOffset } == state.endOffset)
        #expect(store.locked { store.state.nextKey } == state.nextKey)
    }

    @Test("the index is current after a close, and no longer after a commit")
    func indexCurrency() throws {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/i.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        try insert(store, 1)
        #expect(!store.locked { store.state.indexIsCurrent })
        try store.close()
        let reopened = try LogStore.open(
            path: "/i.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        #expect(reopened.indexState == .loaded)
        #expect(reopened.locked { reopened.state.indexIsCurrent })
        try insert(reopened, 2)
        #expect(!reopened.locked { reopened.state.indexIsCurrent })
        let length = reopened.locked { reopened.state.liveLength }
        let end = reopened.locked { reopened.state.endOffset }
        // Two transactions' commit records against the one a compacted file would have.
        #expect(length < end)
    }
}
