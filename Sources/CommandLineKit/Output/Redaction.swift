/// Passwords taken out of text before a tool prints it.
///
/// The tools name a database by its user, host and database only, but a message may quote a
/// command-line argument, and an argument may be a connection string with a password in it.
/// Every `error:` and `warning:` line passes through ``passwords(in:)``, so that none is
/// printed.
///
/// ```swift
/// Redaction.passwords(in: "postgresql://lab:secret@db/lab?password=other")
/// // "postgresql://lab:***@db/lab?password=***"
/// ```
public enum Redaction {
    /// `text` with the password of every URI (`scheme://user:password@…`) and every
    /// `password=…` parameter replaced by `***`.
    public static func passwords(in text: String) -> String {
        guard text.contains(":") || text.lowercased().contains("password") else { return text }
        var result = text.replacing(
            #/(?<prefix>[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:'"]*):[^\s/?#@'"]*@/#
        ) { match in
            "\(match.prefix):***@"
        }
        result = result.replacing(#/(?<prefix>(?i:password)\s*=\s*)[^\s&'"]*/#) { match in
            "\(match.prefix)***"
        }
        return result
    }
}
