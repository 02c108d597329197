// Terminal display width, in cells, of graphemes and strings.
//
// East Asian Wide and Fullwidth code points (UAX #11), which include the emoji with default emoji
// presentation, take two cells. Ranges are merged across unassigned code points to keep the table
// short. Generated from the Unicode 14 data, extended for the Unicode 15 emoji blocks.
private let wideRanges: [ClosedRange<UInt32>] = [
    0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0...0x23F0,
    0x23F3...0x23F3, 0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F...0x267F,
    0x2693...0x2693, 0x26A1...0x26A1, 0x26AA...0x26AB, 0x26BD...0x26BE, 0x26C4...0x26C5,
    0x26CE...0x26CE, 0x26D4...0x26D4, 0x26EA...0x26EA, 0x26F2...0x26F3, 0x26F5...0x26F5,
    0x26FA...0x26FA, 0x26FD...0x26FD, 0x2705...0x2705, 0x270A...0x270B, 0x2728...0x2728,
    0x274C...0x274C, 0x274E...0x274E, 0x2753...0x2755, 0x2757...0x2757, 0x2795...0x2797,
    0x27B0...0x27B0, 0x27BF...0x27BF, 0x2B1B...0x2B1C, 0x2B50...0x2B50, 0x2B55...0x2B55,
    0x2E80...0x3029, 0x302E...0x303E, 0x3041...0x3096, 0x309B...0x3247, 0x3250...0x4DBF,
    0x4E00...0xA4CF, 0xA960...0xA97C, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19,
    0xFE30...0xFE6B, 0xFF01...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x16FF0...0x1B2FB,
    0x1F004...0x1F004, 0x1F0CF...0x1F0CF, 0x1F18E...0x1F18E, 0x1F191...0x1F19A,
    0x1F200...0x1F320, 0x1F32D...0x1F335, 0x1F337...0x1F37C, 0x1F37E...0x1F393,
    0x1F3A0...0x1F3CA, 0x1F3CF...0x1F3D3, 0x1F3E0...0x1F3F0, 0x1F3F4...0x1F3F4,
    0x1F3F8...0x1F43E, 0x1F440...0x1F440, 0x1F442...0x1F4FC, 0x1F4FF...0x1F53D,
    0x1F54B...0x1F54E, 0x1F550...0x1F567, 0x1F57A...0x1F57A, 0x1F595...0x1F596,
    0x1F5A4...0x1F5A4, 0x1F5FB...0x1F64F, 0x1F680...0x1F6C5, 0x1F6CC...0x1F6CC,
    0x1F6D0...0x1F6D2, 0x1F6D5...0x1F6DF, 0x1F6EB...0x1F6EC, 0x1F6F4...0x1F6FC,
    0x1F7E0...0x1F7F0, 0x1F90C...0x1F93A, 0x1F93C...0x1F945, 0x1F947...0x1F9FF,
    0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
]

// Hangul Jamo vowels and final consonants join the preceding leading consonant into one syllable
// cell; their general category (Lo) doesn't say so.
private let joiningJamoRanges: [ClosedRange<UInt32>] = [0x1160...0x11FF, 0xD7B0...0xD7FF]

private func contains(_ table: [ClosedRange<UInt32>], _ value: UInt32) -> Bool {
    var low = 0
    var high = table.count - 1
    while low <= high {
        let mid = (low + high) / 2
        if value < table[mid].lowerBound {
            high = mid - 1
        } else if value > table[mid].upperBound {
            low = mid + 1
        } else {
            return true
        }
    }
    return false
}

extension Unicode.Scalar {
    /// Cells this scalar takes on its own: 0 (controls, combining marks, format characters), 1 or 2.
    var cellWidth: Int {
        let v = value
        if v >= 0x20 && v < 0x7F { return 1 }
        if v < 0x20 || (v >= 0x7F && v < 0xA0) { return 0 }
        if contains(joiningJamoRanges, v) { return 0 }
        switch properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .lineSeparator, .paragraphSeparator:
            return 0
        default:
            return contains(wideRanges, v) ? 2 : 1
        }
    }
}

extension Character {
    /// Cells this grapheme takes in a terminal: 0 (not drawn), 1 or 2.
    public var displayWidth: Int {
        let scalars = unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count == 1 { return first.cellWidth }
        // Control graphemes such as "\r\n" are never drawn.
        if first.value < 0x20 || (first.value >= 0x7F && first.value < 0xA0) { return 0 }
        var emojiPresentation = false
        var textPresentation = false
        var regionalIndicators = 0
        var widest = 0
        for scalar in scalars {
            switch scalar.value {
            case 0xFE0F, 0x200D: emojiPresentation = true  // VS16, or a ZWJ sequence
            case 0xFE0E: textPresentation = true  // VS15
            case 0x1F1E6...0x1F1FF: regionalIndicators += 1
            default: break
            }
            widest = max(widest, scalar.cellWidth)
        }
        if regionalIndicators >= 2 { return 2 }  // a flag
        if textPresentation { return widest == 0 ? 0 : 1 }
        if emojiPresentation && first.properties.isEmoji { return 2 }
        return min(widest, 2)
    }
}

/// Horizontal placement of text inside a wider area.
public enum Alignment: Sendable {
    case left, center, right
}

extension StringProtocol {
    /// Cells this string takes in a terminal.
    public var displayWidth: Int {
        var total = 0
        for character in self { total += character.displayWidth }
        return total
    }
}

extension String {
    /// The longest prefix that fits in `width` cells, ending with `ellipsis` when something was cut.
    /// A wide character that would straddle the limit is left out, so the result may be one cell
    /// narrower than `width`.
    public func truncated(toWidth width: Int, ellipsis: String = "") -> String {
        if displayWidth <= width { return self }
        let ellipsisWidth = ellipsis.displayWidth
        guard ellipsisWidth <= width else { return ellipsis.truncated(toWidth: width) }
        let budget = width - ellipsisWidth
        var result = ""
        var used = 0
        for character in self {
            let w = character.displayWidth
            if used + w > budget { break }
            result.append(character)
            used += w
        }
        return result + ellipsis
    }

    /// The longest suffix that fits in `width` cells, starting with `ellipsis` when something was
    /// cut: the end of a long number being typed stays visible.
    public func truncatedFromStart(toWidth width: Int, ellipsis: String = "") -> String {
        if displayWidth <= width { return self }
        let ellipsisWidth = ellipsis.displayWidth
        guard ellipsisWidth <= width else { return ellipsis.truncated(toWidth: width) }
        let budget = width - ellipsisWidth
        var kept: [Character] = []
        var used = 0
        for character in reversed() {
            let w = character.displayWidth
            if used + w > budget { break }
            kept.append(character)
            used += w
        }
        return ellipsis + String(kept.reversed())
    }

    /// Exactly `width` cells: truncated if wider, padded with spaces according to `alignment`.
    public func padded(toWidth width: Int, alignment: Alignment = .left) -> String {
        let fitted = truncated(toWidth: max(0, width))
        let gap = max(0, width - fitted.displayWidth)
        switch alignment {
        case .left:
            return fitted + String(repeating: " ", count: gap)
        case .right:
            return String(repeating: " ", count: gap) + fitted
        case .center:
            let left = gap / 2
            return String(repeating: " ", count: left) + fitted + String(repeating: " ", count: gap - left)
        }
    }

    /// Lines of at most `width` cells, breaking at spaces where possible and inside words where
    /// not (Korean and Japanese text may have no spaces to break at). Newlines are kept as breaks.
    public func wrapped(toWidth width: Int) -> [String] {
        guard width > 0 else { return split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
        var lines: [String] = []
        for paragraph in split(separator: "\n", omittingEmptySubsequences: false) {
            var line: [Character] = []
            var lineWidth = 0
            var lastSpace: Int?  // index in `line`
            for character in paragraph {
                let w = character.displayWidth
                if lineWidth + w <= width {
                    if character == " " { lastSpace = line.count }
                    line.append(character)
                    lineWidth += w
                    continue
                }
                if character == " " {
                    lines.append(String(line))
                    line = []
                    lineWidth = 0
                    lastSpace = nil
                    continue
                }
                var carried: [Character] = []
                if let space = lastSpace {
                    carried = Array(line[(space + 1)...])
                    line.removeSubrange(space...)
                }
                lines.append(String(line))
                if String(carried).displayWidth + w > width {
                    if !carried.isEmpty { lines.append(String(carried)) }
                    carried = []
                }
                line = carried + [character]
                lineWidth = String(line).displayWidth
                lastSpace = nil
            }
            lines.append(String(line))
        }
        return lines
    }
}
