/// "Did you mean …?" for a mistyped command, option value or name.
///
/// ```swift
/// Suggestion.didYouMean("gray-scot", among: ["gray-scott", "fitzhugh-nagumo"])
/// // " (did you mean 'gray-scott'?)"
/// ```
public enum Suggestion {
    /// The known word closest to `word`, if it is close enough to be a likely typo: at most a
    /// third of its letters edited (at least one), ignoring case, or a prefix of it.
    ///
    /// - Parameters:
    ///   - word: What was typed.
    ///   - candidates: The words that would have been understood.
    /// - Returns: The candidate to suggest, or nil.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let typed = Array(word.lowercased())
        guard !typed.isEmpty else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(typed, Array(candidate.lowercased()))
            if distance < (best?.distance ?? Int.max) {
                best = (candidate, distance)
            }
        }
        guard let best else { return nil }
        let limit = max(1, max(typed.count, best.candidate.count) / 3)
        // A prefix of a longer name ("gray" for "gray-scott") is a likely shorthand too.
        let isPrefix = typed.count >= 2 && best.candidate.lowercased().hasPrefix(word.lowercased())
        return best.distance <= limit || isPrefix ? best.candidate : nil
    }

    /// `" (did you mean 'X'?)"` when a candidate is close to `word`, else the empty string, to
    /// follow the unknown word in an error.
    ///
    /// - Parameters:
    ///   - word: What was typed.
    ///   - candidates: The words that would have been understood.
    /// - Returns: The suggestion's text, starting with a space, or the empty string.
    public static func didYouMean(_ word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// The Levenshtein distance: the fewest insertions, deletions and substitutions that turn
    /// `a` into `b`, with a transposition of neighbours counted as one edit.
    ///
    /// - Complexity: O(`a.count` × `b.count`).
    public static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousRow = [Int](repeating: 0, count: b.count + 1)
        var row = Array(0...b.count)
        var twoBack = row
        for i in 1...a.count {
            twoBack = previousRow
            previousRow = row
            row = [Int](repeating: 0, count: b.count + 1)
            row[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                row[j] = min(previousRow[j] + 1, row[j - 1] + 1, previousRow[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    row[j] = min(row[j], twoBack[j - 2] + 1)
                }
            }
        }
        return row[b.count]
    }
}
