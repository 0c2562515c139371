import StoreTestSupport
import Testing

/// The engine's suites run on PostgreSQL only when a server runs: this suite says so, as
/// skipped with the reason, when none does (and fails under `OBJECTLOG_REQUIRE_POSTGRES=1`).
@Suite(
    "PostgreSQL is available to the store suites",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct ServerAvailabilityTests {
    @Test("the store suites include PostgreSQL")
    func included() throws {
        #expect(TestStoreKind.available.contains(.postgreSQL))
        _ = try TestServer.connect()
    }
}
