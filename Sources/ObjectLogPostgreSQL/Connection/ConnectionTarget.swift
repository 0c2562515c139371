import CLibPQ

/// Where a connection goes, as it may be shown: the user, host (or socket directory), port
/// and database of a connection string, and never its password.
///
/// libpq parses the string, so every form it accepts is understood the same way: a URI
/// (`postgresql://user@host/db`, `postgresql://user@/db?host=/socket/dir`) or `key=value`
/// pairs. A password in the string, and `PGPASSWORD` or a password file that libpq reads,
/// never appear in what this shows.
public struct ConnectionTarget: Sendable, Equatable, CustomStringConvertible {
    /// The user name, if the string names one.
    public var user: String?
    /// The host name or address, or the directory of the server's Unix socket.
    public var host: String?
    /// The port, if the string names one.
    public var port: String?
    /// The database name, if the string names one.
    public var database: String?

    /// The parts of `connectionString` that may be shown; nil if libpq cannot parse it.
    public init?(_ connectionString: String) {
        var failure: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &failure) else {
            if let failure { PQfreemem(failure) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                values[String(cString: keyword)] = String(cString: value)
            }
            option += 1
        }
        user = values["user"]
        host = values["host"] ?? values["hostaddr"]
        port = values["port"]
        database = values["dbname"]
    }

    /// `user@host:port/database`, with what the string leaves out left out.
    public var description: String {
        var text = user.map { $0 + "@" } ?? ""
        text += host ?? ""
        if let port { text += ":" + port }
        text += "/" + (database ?? "")
        return text
    }
}
