import CLMDB
import Foundation

/// A second peer, for information: LMDB, a B+tree in a memory map, holding each record encoded
/// under its id, as a careful LMDB user keeps rows.
///
/// It uses the C API with its defaults (every commit synced, so a commit is as durable as an
/// ObjectLog save), one file (`MDB_NOSUBDIR`), keys of eight big-endian bytes so that they sort
/// as the ids do, and `MDB_APPEND` for the bulk insert, whose ids come in ascending order. A
/// value is the name's length (two bytes) and bytes, then the value, count and creation date,
/// eight little-endian bytes each.
final class LMDBPeer {
    private var environment: OpaquePointer?
    private var database: MDB_dbi = 0
    let path: String

    /// Opens (or creates) the environment at `path`, with room for 4 GiB of pages.
    init(path: String) {
        self.path = path
        check(mdb_env_create(&environment), "mdb_env_create")
        check(mdb_env_set_mapsize(environment, 4 << 30), "mdb_env_set_mapsize")
        check(mdb_env_open(environment, path, UInt32(MDB_NOSUBDIR), 0o600), "mdb_env_open")
        var transaction: OpaquePointer?
        check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
        check(mdb_dbi_open(transaction, nil, 0, &database), "mdb_dbi_open")
        check(mdb_txn_commit(transaction), "mdb_txn_commit")
    }

    deinit { mdb_env_close(environment) }

    private func check(_ code: Int32, _ call: String) {
        guard code != MDB_SUCCESS else { return }
        fatalError("LMDB: \(call) failed: \(String(cString: mdb_strerror(code))) (\(path))")
    }

    /// Workload 1: every record in one write transaction, committed (and synced) once.
    func bulkInsert(_ records: [BenchRecord]) {
        var transaction: OpaquePointer?
        check(mdb_txn_begin(environment, nil, 0, &transaction), "mdb_txn_begin")
        var value: [UInt8] = []
        value.reserveCapacity(64)
        for record in records {
            value.removeAll(keepingCapacity: true)
            let name = record.name.utf8
            withUnsafeBytes(of: UInt16(name.count).littleEndian) { value.append(contentsOf: $0) }
            value.append(contentsOf: name)
            for field in [record.value.bitPattern, UInt64(bitPattern: record.count)] {
                withUnsafeBytes(of: field.littleEndian) { value.append(contentsOf: $0) }
            }
            withUnsafeBytes(of: record.created.timeIntervalSince1970.bitPattern.littleEndian) {
                value.append(contentsOf: $0)
            }
            var keyBytes = UInt64(bitPattern: record.id).bigEndian
            withUnsafeMutableBytes(of: &keyBytes) { key in
                value.withUnsafeMutableBytes { bytes in
                    var keyValue = MDB_val(mv_size: key.count, mv_data: key.baseAddress)
                    var dataValue = MDB_val(mv_size: bytes.count, mv_data: bytes.baseAddress)
                    check(
                        mdb_put(transaction, database, &keyValue, &dataValue, UInt32(MDB_APPEND)),
                        "mdb_put"
                    )
                }
            }
        }
        check(mdb_txn_commit(transaction), "mdb_txn_commit")
    }

    /// Workload 2: every record, read in key order through a cursor and decoded.
    func fetchAll() -> [BenchRecord] {
        var transaction: OpaquePointer?
        check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &transaction), "mdb_txn_begin")
        defer { mdb_txn_abort(transaction) }
        var cursor: OpaquePointer?
        check(mdb_cursor_open(transaction, database, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var statistics = MDB_stat()
        check(mdb_stat(transaction, database, &statistics), "mdb_stat")
        var records: [BenchRecord] = []
        records.reserveCapacity(statistics.ms_entries)
        var key = MDB_val()
        var data = MDB_val()
        var operation = MDB_FIRST
        while mdb_cursor_get(cursor, &key, &data, operation) == MDB_SUCCESS {
            operation = MDB_NEXT
            let bytes = UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size)
            let keyBytes = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
            let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(as: UInt16.self)))
            let fields = 2 + nameLength
            func field(_ index: Int) -> UInt64 {
                UInt64(
                    littleEndian: bytes.loadUnaligned(
                        fromByteOffset: fields + 8 * index,
                        as: UInt64.self
                    )
                )
            }
            records.append(
                BenchRecord(
                    id: Int64(
                        bitPattern: UInt64(bigEndian: keyBytes.loadUnaligned(as: UInt64.self))
                    ),
                    name: String(decoding: bytes[2..<fields], as: UTF8.self),
                    value: Double(bitPattern: field(0)),
                    count: Int64(bitPattern: field(1)),
                    created: Date(timeIntervalSince1970: Double(bitPattern: field(2)))
                )
            )
        }
        return records
    }
}
