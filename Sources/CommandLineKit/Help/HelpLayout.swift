/// How a ``HelpPage`` is laid out: where descriptions start, and whether text is wrapped.
///
/// ```swift
/// // Descriptions at column 26, everything wrapped to 80 columns:
/// let wrapped = HelpLayout(labelColumn: .fixed(width: 24), lineWidth: 80)
/// // Descriptions just past each section's longest label (at most 28), lines as written:
/// let asWritten = HelpLayout(labelColumn: .fitted(maximumWidth: 28))
/// ```
public struct HelpLayout: Sendable {
    /// The width of the column of labels, after their two-space indent; a label and the two
    /// spaces after it must fit in it for the description to start on the label's line.
    public enum LabelColumn: Sendable, Hashable {
        /// The same width in every section.
        case fixed(width: Int)
        /// Each section's longest label and two spaces, but at most `maximumWidth`.
        case fitted(maximumWidth: Int)
    }

    /// The width of the column of labels.
    public var labelColumn: LabelColumn
    /// The width text is wrapped to at spaces (the overview, the discussion, descriptions), or
    /// nil to print text as written, broken only at its own line breaks.
    public var lineWidth: Int?

    /// Creates a layout.
    public init(labelColumn: LabelColumn, lineWidth: Int? = nil) {
        self.labelColumn = labelColumn
        self.lineWidth = lineWidth
    }

    /// A paragraph's lines: wrapped to ``lineWidth``, or as written.
    func paragraph(_ text: String) -> [String] {
        guard let lineWidth else { return [text] }
        return Self.wrap(text, width: lineWidth)
    }

    /// The lines of a section's entries: each label indented by two spaces, its description
    /// beside it or, for a label too wide for the column, on the lines below.
    func lines(of entries: [HelpEntry]) -> [String] {
        let width =
            switch labelColumn {
            case .fixed(let width): width
            case .fitted(let maximum): min(maximum, (entries.map(\.label.count).max() ?? 0) + 2)
            }
        let indent = String(repeating: " ", count: 2 + width)
        var lines: [String] = []
        for entry in entries {
            let description =
                if let lineWidth {
                    Self.wrap(entry.description, width: lineWidth - indent.count)
                } else {
                    entry.description.split(separator: "\n", omittingEmptySubsequences: false)
                        .map(String.init)
                }
            if entry.label.count + 2 <= width {
                let padding = String(repeating: " ", count: width - entry.label.count)
                lines.append("  " + entry.label + padding + description[0])
                lines += description.dropFirst().map { indent + $0 }
            } else {
                lines.append("  " + entry.label)
                lines += description.map { indent + $0 }
            }
        }
        return lines
    }

    /// `text` broken at spaces into lines of at most `width` characters (a longer word stands
    /// alone); always at least one line.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        lines.append(line)
        return lines
    }
}
