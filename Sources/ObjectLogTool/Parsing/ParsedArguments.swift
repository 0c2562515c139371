/// A command line split into positional arguments, flags and option values, checked against a
/// ``CommandConfiguration``.
struct ParsedArguments: Sendable {
    /// The positional arguments, in order.
    var positionals: [String] = []
    /// The flags given, by canonical name.
    var flags: Set<String> = []
    /// The option values given, by canonical name (the last one wins).
    var values: [String: String] = [:]

    /// Whether the flag `name` was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of the option `name`, if given.
    func value(_ name: String) -> String? { values[name] }
}
