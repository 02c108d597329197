import Foundation
import Testing

@testable import TetherJSON

/// Parses `text`, or returns the error.
private func parseResult(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<JSON, JSONParseError> {
    Result { () throws(JSONParseError) -> JSON in try JSONParser(maxDepth: maxDepth).parse(text) }
}

private func parseResult(bytes: [UInt8]) -> Result<JSON, JSONParseError> {
    Result { () throws(JSONParseError) -> JSON in try JSONParser().parse(bytes) }
}

private func parseError(_ text: String) -> JSONParseError? {
    if case .failure(let error) = parseResult(text) { return error }
    return nil
}

private func parseError(bytes: [UInt8]) -> JSONParseError? {
    if case .failure(let error) = parseResult(bytes: bytes) { return error }
    return nil
}

/// `"` + bytes + `"`, as raw bytes.
private func quoted(_ bytes: [UInt8]) -> [UInt8] { [0x22] + bytes + [0x22] }

@Suite("JSONParser")
struct JSONParserTests {
    // MARK: Accepted documents

    @Test func scalars() throws {
        #expect(try JSON(parsing: "null") == .null)
        #expect(try JSON(parsing: "true") == .bool(true))
        #expect(try JSON(parsing: "false") == .bool(false))
        #expect(try JSON(parsing: "0") == .int(0))
        #expect(try JSON(parsing: "42") == .int(42))
        #expect(try JSON(parsing: "-17") == .int(-17))
        #expect(try JSON(parsing: "\"hi\"") == .string("hi"))
        #expect(try JSON(parsing: "\"\"") == .string(""))
    }

    @Test func containersAndWhitespace() throws {
        #expect(try JSON(parsing: "[]") == .array([]))
        #expect(try JSON(parsing: "{}") == .object([:]))
        #expect(try JSON(parsing: "[ ]") == .array([]))
        #expect(try JSON(parsing: "{ \n}") == .object([:]))
        let text = " \t\r\n{ \"a\" : [ 1 , 2.5 , \"x\" , true , false , null , { } , [ ] ] , \"b\":{\"c\":{\"d\":[[]]}} }\n\t "
        let expected: JSON = [
            "a": [1, 2.5, "x", true, false, nil, [:], []],
            "b": ["c": ["d": [[]]]],
        ]
        #expect(try JSON(parsing: text) == expected)
        #expect(try JSON(parsing: "[[[1]],[[2],[3,[4]]]]") == [[[1]], [[2], [3, [4]]]])
    }

    @Test func everyEntryPointAgrees() throws {
        let text = #"{"id":"a1","n":[1,-2,3.5],"ok":true}"#
        let expected: JSON = ["id": "a1", "n": [1, -2, 3.5], "ok": true]
        let bytes = Array(text.utf8)
        #expect(try JSONParser().parse(text) == expected)
        #expect(try JSONParser().parse(bytes) == expected)
        #expect(try JSONParser().parse(bytes[...]) == expected)
        #expect(try JSONParser().parse(Data(bytes)) == expected)
        #expect(try JSON(parsing: bytes) == expected)
        let raw = try bytes.withUnsafeBytes { raw throws(JSONParseError) in try JSONParser().parse(raw) }
        #expect(raw == expected)
        // A view into a larger buffer: only the window is parsed.
        let framed = Array("xx\(text)yy".utf8)
        let windowed = try framed.withUnsafeBytes { raw throws(JSONParseError) in
            try JSONParser().parse(UnsafeRawBufferPointer(rebasing: raw[2..<(2 + bytes.count)]))
        }
        #expect(windowed == expected)
        // A non-contiguous collection goes through a copy.
        #expect(try JSONParser().parse(bytes.lazy.map { $0 }) == expected)
    }

    @Test func emptyBufferIsAnError() {
        #expect(throws: JSONParseError("unexpected end of input", at: 0)) {
            try JSONParser().parse(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        #expect(throws: JSONParseError("unexpected end of input", at: 0)) { try JSONParser().parse([UInt8]()) }
    }

    @Test func stringEscapes() throws {
        #expect(try JSON(parsing: #""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSON(parsing: #""\u0041\u00e9\u00E9\u4e2D""#) == .string("Aéé中"))
        #expect(try JSON(parsing: #""\u0000""#) == .string("\u{0}"))
        #expect(try JSON(parsing: #""\u001f\u007F""#) == .string("\u{1F}\u{7F}"))
        #expect(try JSON(parsing: #""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSON(parsing: #""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSON(parsing: #""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSON(parsing: #""\uD800\uDC00""#) == .string("\u{10000}"))
        #expect(try JSON(parsing: #""a\nb😀c\"""#) == .string("a\nb😀c\""))
        #expect(try JSON(parsing: #""\uFFFF\uFEFF""#) == .string("\u{FFFF}\u{FEFF}"))
        // Escapes and raw multi-byte text mixed, on both sides of an escape.
        #expect(try JSON(parsing: "\"한국어\\t日本語\\u0020🇰🇷\"") == .string("한국어\t日本語 🇰🇷"))
    }

    @Test func rawUnicodeText() throws {
        let text = "{\"이름\":\"홍길동\",\"emoji\":\"👩‍👩‍👧‍👦 🏳️‍🌈\",\"mixed\":\"Ωμέγα ∑ \u{7F} \u{80} \u{7FF} \u{800} \u{FFFF} \u{10000} \u{10FFFF}\"}"
        let value = try JSON(parsing: text)
        #expect(value["이름"] == "홍길동")
        #expect(value["emoji"] == "👩‍👩‍👧‍👦 🏳️‍🌈")
        #expect(value["mixed"] == .string("Ωμέγα ∑ \u{7F} \u{80} \u{7FF} \u{800} \u{FFFF} \u{10000} \u{10FFFF}"))
    }

    @Test func utf8BoundaryCodePointsAreAccepted() throws {
        let valid: [([UInt8], Unicode.Scalar)] = [
            ([0xC2, 0x80], "\u{80}"), ([0xDF, 0xBF], "\u{7FF}"),
            ([0xE0, 0xA0, 0x80], "\u{800}"), ([0xED, 0x9F, 0xBF], "\u{D7FF}"),
            ([0xEE, 0x80, 0x80], "\u{E000}"), ([0xEF, 0xBF, 0xBF], "\u{FFFF}"),
            ([0xF0, 0x90, 0x80, 0x80], "\u{10000}"), ([0xF4, 0x8F, 0xBF, 0xBF], "\u{10FFFF}"),
        ]
        for (bytes, scalar) in valid {
            #expect(try JSON(parsing: quoted(bytes)) == .string(String(Character(scalar))))
            // Also on the escaped path.
            #expect(try JSON(parsing: quoted([0x5C, 0x6E] + bytes)) == .string("\n" + String(Character(scalar))))
        }
    }

    @Test func duplicateKeysLastWins() throws {
        #expect(try JSON(parsing: #"{"a":1,"b":2,"a":3}"#) == ["a": 3, "b": 2])
        #expect(try JSON(parsing: #"{"a":{"x":1},"a":[2]}"#) == ["a": [2]])
        #expect(try JSON(parsing: #"{"\u0061":1,"a":2}"#) == ["a": 2])
    }

    // MARK: Numbers

    @Test func integers() throws {
        #expect(try JSON(parsing: "9223372036854775807") == .int(Int.max))
        #expect(try JSON(parsing: "-9223372036854775808") == .int(Int.min))
        if case .int = try JSON(parsing: "-9223372036854775808") {} else { Issue.record("Int.min is not .int") }
        // Just outside Int: doubles.
        let above = try JSON(parsing: "9223372036854775808")
        #expect(above == .double(9_223_372_036_854_775_808.0))
        if case .double = above {} else { Issue.record("Int.max + 1 should be a double") }
        #expect(try JSON(parsing: "-9223372036854775809") == .double(-9_223_372_036_854_775_809.0))
        let huge = try JSON(parsing: "123456789012345678901234567890")
        #expect(huge == .double(1.2345678901234568e29))
        if case .double = huge {} else { Issue.record("a huge integer should be a double") }
        #expect(try JSON(parsing: "-123456789012345678901234567890") == .double(-1.2345678901234568e29))
    }

    @Test func fractionsAndExponents() throws {
        let cases: [(String, Double)] = [
            ("1.5", 1.5), ("-1.5", -1.5), ("0.1", 0.1), ("0.30000000000000004", 0.30000000000000004),
            ("1e2", 100), ("1E2", 100), ("1e+2", 100), ("1e-2", 0.01), ("-1.25E-3", -0.00125),
            ("0e0", 0), ("0.0", 0), ("1.0", 1), ("10.50", 10.5), ("1e0", 1), ("0E-0", 0),
            ("1e22", 1e22), ("1e23", 1e23), ("123456789.123456789e-5", 1234.56789123456789),
            ("1.7976931348623157e308", .greatestFiniteMagnitude),
            ("-1.7976931348623157e308", -.greatestFiniteMagnitude),
            ("2.2250738585072014e-308", 2.2250738585072014e-308),
            ("5e-324", .leastNonzeroMagnitude), ("4.9406564584124654e-324", .leastNonzeroMagnitude),
            ("1e-400", 0), ("-1e-400", -0.0),
            ("0.000000000000000000000000000001", 1e-30),
            ("100000000000000000000000000000.0", 1e29),
            ("9007199254740993.0", 9_007_199_254_740_992),
            ("0.1e1", 1), ("12345678901234567890.5", 12_345_678_901_234_567_890.5),
            ("1" + String(repeating: "0", count: 300), 1e300),
            ("0." + String(repeating: "0", count: 320) + "1", Double("1e-321")!),
            ("1e00000000000000000000000002", 100),
            ("0e999999999999999999", 0),
            ("1e-999999999999999999", 0),
        ]
        for (text, expected) in cases {
            let value = try JSON(parsing: text)
            guard case .double(let d) = value else {
                Issue.record("\(text) parsed as \(value), expected a double")
                continue
            }
            #expect(d.bitPattern == expected.bitPattern, "\(text) -> \(d), expected \(expected)")
        }
    }

    @Test func negativeZero() throws {
        for text in ["-0", "-0.0", "-0e5", "-0E-3"] {
            let value = try JSON(parsing: text)
            guard case .double(let d) = value else {
                Issue.record("\(text) parsed as \(value)")
                continue
            }
            #expect(d == 0 && d.sign == .minus, "\(text)")
        }
        #expect(try JSON(parsing: "-0") == .int(0))  // numerically equal
        #expect(try JSON(parsing: "0") == .int(0))
    }

    @Test func numbersOutOfRange() {
        for text in ["1e400", "-1e400", "1.8e308", "123e99999999999999999", "[1,1e309]", "{\"a\":-1E+309}"] {
            #expect(parseError(text)?.message == "number out of range", "\(text)")
        }
        #expect(parseError("[1,1e309]")?.offset == 3)
    }

    @Test func randomDoublesRoundTripExactly() throws {
        var rng = JSONTestRNG(seed: 0xD0B1E)
        for _ in 0..<20_000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            let value = try JSON(parsing: d.description)
            guard case .double(let parsed) = value else {
                // Integral values of exactly-representable magnitude never print without ".0" or an exponent.
                Issue.record("\(d.description) parsed as \(value)")
                continue
            }
            #expect(parsed.bitPattern == d.bitPattern, "\(d.description)")
        }
    }

    @Test func randomDecimalTextMatchesStandardLibrary() throws {
        // Fast and slow number paths both round correctly: compare with Double(String).
        var rng = JSONTestRNG(seed: 42)
        for _ in 0..<20_000 {
            var text = rng.next() % 4 == 0 ? "-" : ""
            let intDigits = Int(rng.next() % 22) + 1
            text += String(Int(rng.next() % 9) + 1)
            for _ in 1..<intDigits { text += String(rng.next() % 10) }
            if rng.next() % 2 == 0 {
                text += "."
                for _ in 0..<(Int(rng.next() % 22) + 1) { text += String(rng.next() % 10) }
            }
            if rng.next() % 2 == 0 {
                text += ["e", "E", "e+", "e-", "E-"][Int(rng.next() % 5)] + String(rng.next() % 40)
            }
            guard let expected = Double(text) else {
                Issue.record("test generated invalid \(text)")
                continue
            }
            let value = try JSON(parsing: text)
            switch value {
            case .int(let i): #expect(Double(i) == expected && !text.contains("."), "\(text)")
            case .double(let d): #expect(d.bitPattern == expected.bitPattern, "\(text) -> \(d) expected \(expected)")
            default: Issue.record("\(text) -> \(value)")
            }
        }
    }

    // MARK: Rejections

    @Test func errorDescriptionNamesTheByte() {
        let error = parseError(#"{"name":"tether","#)
        #expect(error == JSONParseError("unexpected end of input", at: 17))
        #expect(error?.description == "unexpected end of input at byte 17")
    }

    @Test func rejectsTrailingGarbage() {
        #expect(parseError("1 2") == JSONParseError("unexpected data after the end of the document", at: 2))
        #expect(parseError("{} x")?.offset == 3)
        #expect(parseError("[1]]")?.offset == 3)
        #expect(parseError("nullx")?.offset == 4)
        #expect(parseError("truefalse")?.offset == 4)
        #expect(parseError("\"a\"\"b\"")?.offset == 3)
        #expect(parseError("0x10")?.offset == 1)
        #expect(parseError("1\u{0}") != nil)
    }

    @Test func rejectsLeadingZeros() {
        for text in ["01", "-01", "00", "007", "[00]", "0123.4", "-00.5"] {
            #expect(parseError(text)?.message == "leading zeros are not allowed", "\(text)")
        }
    }

    @Test func rejectsMalformedNumbers() {
        let cases: [(String, String, Int)] = [
            ("+1", "unexpected character '+'", 0),
            (".5", "unexpected character '.'", 0),
            ("1.", "unexpected end of input", 2),
            ("1.e3", "expected digit after decimal point", 2),
            ("1.x", "expected digit after decimal point", 2),
            ("1e", "unexpected end of input", 2),
            ("1e+", "unexpected end of input", 3),
            ("1ex", "expected digit in exponent", 2),
            ("1e+-2", "expected digit in exponent", 3),
            ("-", "unexpected end of input", 1),
            ("-a", "expected digit after '-'", 1),
            ("- 1", "expected digit after '-'", 1),
            ("--1", "expected digit after '-'", 1),
            ("[1.]", "expected digit after decimal point", 3),
        ]
        for (text, message, offset) in cases {
            #expect(parseError(text) == JSONParseError(message, at: offset), "\(text)")
        }
    }

    @Test func rejectsNaNAndInfinity() {
        for text in ["NaN", "nan", "Infinity", "-Infinity", "inf", "-inf", "[NaN]", "{\"a\":Infinity}"] {
            #expect(parseError(text) != nil, "\(text)")
        }
        #expect(parseError("NaN") == JSONParseError("unexpected character 'N'", at: 0))
        #expect(parseError("-Infinity") == JSONParseError("expected digit after '-'", at: 1))
    }

    @Test func rejectsSingleQuotes() {
        #expect(parseError("'a'") == JSONParseError("unexpected character \"'\" (strings use double quotes)", at: 0))
        #expect(parseError("{'a':1}") == JSONParseError("expected string key", at: 1))
        #expect(parseError("[\"a\",'b']")?.offset == 5)
    }

    @Test func rejectsTrailingCommas() {
        #expect(parseError("[1,]") == JSONParseError("trailing comma", at: 2))
        #expect(parseError("[1, \n ]") == JSONParseError("trailing comma", at: 2))
        #expect(parseError(#"{"a":1,}"#) == JSONParseError("trailing comma", at: 6))
        #expect(parseError(#"{"a":1 , }"#) == JSONParseError("trailing comma", at: 7))
        #expect(parseError("[,]") != nil)
        #expect(parseError("[1,,2]") != nil)
        #expect(parseError("{,}") != nil)
    }

    @Test func rejectsStructuralErrors() {
        let cases: [(String, String, Int)] = [
            ("", "unexpected end of input", 0),
            ("   ", "unexpected end of input", 3),
            ("[", "unexpected end of input", 1),
            ("[1", "unexpected end of input", 2),
            ("[1 2]", "expected ',' or ']'", 3),
            ("{", "unexpected end of input", 1),
            ("{1:2}", "expected string key", 1),
            (#"{"a" 1}"#, "expected ':'", 5),
            (#"{"a":1 "b":2}"#, "expected ',' or '}'", 7),
            (#"{"a"}"#, "expected ':'", 4),
            (#"{"a":}"#, "unexpected character '}'", 5),
            ("]", "unexpected character ']'", 0),
            ("}", "unexpected character '}'", 0),
            ("[}", "unexpected character '}'", 1),
            ("{]", "expected string key", 1),
            ("[1}", "expected ',' or ']'", 2),
            (#"{"a":1]"#, "expected ',' or '}'", 6),
            ("tru", "unexpected end of input", 3),
            ("trux", "unexpected character 't'", 0),
            ("nul", "unexpected end of input", 3),
            ("True", "unexpected character 'T'", 0),
            ("undefined", "unexpected character 'u'", 0),
            ("\u{FEFF}{}", "unexpected byte 0xEF", 0),
            ("[1]\u{0}", "unexpected data after the end of the document", 3),
            ("\u{0}", "unexpected byte 0x00", 0),
            ("/* c */ 1", "unexpected character '/'", 0),
            ("\u{A0}1", "unexpected byte 0xC2", 0),
            ("\u{B}1", "unexpected byte 0x0B", 0),
            ("\u{C}1", "unexpected byte 0x0C", 0),
        ]
        for (text, message, offset) in cases {
            #expect(parseError(text) == JSONParseError(message, at: offset), "\(text.debugDescription)")
        }
    }

    @Test func rejectsBareControlCharactersInStrings() {
        for byte in UInt8(0)..<0x20 {
            #expect(parseError(bytes: quoted([0x61, byte, 0x62])) == JSONParseError(
                "unescaped control character 0x\(String(byte, radix: 16, uppercase: true).leftPadded(2)) in string", at: 2))
            // After an escape too (the slow path).
            #expect(parseError(bytes: quoted([0x5C, 0x6E, byte]))?.offset == 3)
        }
        // DEL is not a control character for JSON.
        #expect(parseResult(bytes: quoted([0x7F])).success == .string("\u{7F}"))
    }

    @Test func rejectsInvalidEscapes() {
        let cases: [(String, String, Int)] = [
            (#""\x""#, "invalid escape sequence", 1),
            (#""\'""#, "invalid escape sequence", 1),
            (#""\a""#, "invalid escape sequence", 1),
            (#""\U0041""#, "invalid escape sequence", 1),
            (#""\0""#, "invalid escape sequence", 1),
            ("\"\\\u{1}\"", "invalid escape sequence", 1),
            (#""\u12G4""#, "invalid \\u escape (expected 4 hex digits)", 5),
            (#""\u123""#, "invalid \\u escape (expected 4 hex digits)", 6),
            (#""\u""#, "invalid \\u escape (expected 4 hex digits)", 3),
            (#""\u+123""#, "invalid \\u escape (expected 4 hex digits)", 3),
            (#""abc\"#, "unterminated string", 5),
            (#""\u12"#, "unterminated string", 5),
            (#""abc"#, "unterminated string", 4),
        ]
        for (text, message, offset) in cases {
            #expect(parseError(text) == JSONParseError(message, at: offset), "\(text)")
        }
    }

    @Test func rejectsLoneSurrogateEscapes() {
        let cases = [
            #""\uD800""#, #""\uDBFF""#, #""\uDC00""#, #""\uDFFF""#, #""\uD800\u0041""#, #""\uD800x""#,
            #""\uD800\uD800""#, #""\uDE00\uD83D""#, #""\uD800\n""#, #""a\uD83D""#,
        ]
        for text in cases {
            #expect(parseError(text)?.message == "lone surrogate in \\u escape", "\(text)")
        }
        #expect(parseError(#""ab\uD800""#)?.offset == 3)
        // A truncated low half is an unterminated string, not a crash.
        #expect(parseError(#""\uD83D\uDE"#) == JSONParseError("unterminated string", at: 11))
    }

    @Test func rejectsInvalidUTF8() {
        let cases: [([UInt8], String)] = [
            // Stray continuation bytes.
            ([0x80], "invalid UTF-8 (unexpected continuation byte)"),
            ([0xBF], "invalid UTF-8 (unexpected continuation byte)"),
            ([0x61, 0x80, 0x80], "invalid UTF-8 (unexpected continuation byte)"),
            // Overlong encodings.
            ([0xC0, 0x80], "invalid UTF-8 (overlong encoding)"),
            ([0xC0, 0xA2], "invalid UTF-8 (overlong encoding)"),
            ([0xC1, 0xBF], "invalid UTF-8 (overlong encoding)"),
            ([0xE0, 0x80, 0x80], "invalid UTF-8 (overlong encoding)"),
            ([0xE0, 0x9F, 0xBF], "invalid UTF-8 (overlong encoding)"),
            ([0xF0, 0x80, 0x80, 0x80], "invalid UTF-8 (overlong encoding)"),
            ([0xF0, 0x8F, 0xBF, 0xBF], "invalid UTF-8 (overlong encoding)"),
            // UTF-16 surrogates encoded in UTF-8 (CESU-8 style).
            ([0xED, 0xA0, 0x80], "invalid UTF-8 (encoded surrogate)"),
            ([0xED, 0xBF, 0xBF], "invalid UTF-8 (encoded surrogate)"),
            ([0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80], "invalid UTF-8 (encoded surrogate)"),
            // Beyond U+10FFFF, and bytes that never occur.
            ([0xF4, 0x90, 0x80, 0x80], "invalid UTF-8 (code point above U+10FFFF)"),
            ([0xF5, 0x80, 0x80, 0x80], "invalid UTF-8 (byte 0xF5 never appears in UTF-8)"),
            ([0xF7, 0xBF, 0xBF, 0xBF], "invalid UTF-8 (byte 0xF7 never appears in UTF-8)"),
            ([0xF8, 0x88, 0x80, 0x80, 0x80], "invalid UTF-8 (byte 0xF8 never appears in UTF-8)"),
            ([0xFC, 0x84, 0x80, 0x80, 0x80, 0x80], "invalid UTF-8 (byte 0xFC never appears in UTF-8)"),
            ([0xFE], "invalid UTF-8 (byte 0xFE never appears in UTF-8)"),
            ([0xFF], "invalid UTF-8 (byte 0xFF never appears in UTF-8)"),
            // Truncated sequences (cut off by the closing quote or by another character).
            ([0xC3], "invalid UTF-8 (truncated sequence)"),
            ([0xE2, 0x82], "invalid UTF-8 (truncated sequence)"),
            ([0xF0, 0x9F, 0x98], "invalid UTF-8 (truncated sequence)"),
            ([0xE2, 0x61, 0x82], "invalid UTF-8 (truncated sequence)"),
            ([0xF0, 0x9F, 0x98, 0x61], "invalid UTF-8 (truncated sequence)"),
            ([0xC3, 0xC3, 0xA9], "invalid UTF-8 (truncated sequence)"),
        ]
        for (bytes, message) in cases {
            let at = bytes.firstIndex { $0 >= 0x80 } ?? 0
            // Fast path (no escapes in the string).
            #expect(parseError(bytes: quoted(bytes)) == JSONParseError(message, at: 1 + at), "\(bytes)")
            // Escaped path.
            #expect(parseError(bytes: quoted([0x5C, 0x74] + bytes)) == JSONParseError(message, at: 3 + at), "\\t + \(bytes)")
            // As an object key.
            #expect(parseError(bytes: [0x7B] + quoted(bytes) + Array(":1}".utf8))?.message == message, "key \(bytes)")
        }
        // A sequence cut off by the end of the input.
        for bytes: [UInt8] in [[0x22, 0xC3], [0x22, 0xE2, 0x82], [0x22, 0xF0, 0x9F, 0x98], [0x22, 0x5C, 0x6E, 0xF0]] {
            #expect(parseError(bytes: bytes) == JSONParseError("invalid UTF-8 (truncated sequence)", at: bytes.count - bytes.reversed().prefix { $0 & 0xC0 == 0x80 }.count - 1))
        }
        // Outside strings, any non-ASCII byte is simply unexpected.
        #expect(parseError(bytes: [0x5B, 0xC3, 0xA9, 0x5D]) == JSONParseError("unexpected byte 0xC3", at: 1))
    }

    // MARK: Robustness

    @Test func everyTruncationThrows() throws {
        let documents = [
            #"{"a":[1,2.5e-3,{"b":null}],"c":"x\ny\u00e9😀","d":true,"e":false,"f":-0.5}"#,
            #"[[],{},[[[]]],"",0,-1,1E+2,"\uD83D\uDE00","한국어"]"#,
            #"{"type":"patch","room":"todo","epoch":"e1","from":3,"version":4,"ops":[{"op":"replace","path":"/count","value":42}]}"#,
            "\"👩‍👩‍👧‍👦\"", "123456789", "-1.5e+10", "true", "false", "null",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            _ = try JSON(parsing: bytes)
            for length in 0..<bytes.count {
                let prefix = Array(bytes[0..<length])
                // A prefix of a number can itself be a complete number ("12" of "123").
                if document.first?.isNumber == true || document.first == "-",
                    case .success(let value) = parseResult(bytes: prefix)
                {
                    #expect(value.doubleValue != nil)
                    continue
                }
                #expect(parseError(bytes: prefix) != nil, "prefix \(length) of \(document)")
            }
        }
    }

    @Test func deepNestingIsRejectedCleanly() {
        let arrays = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(parseError(arrays) == JSONParseError("nesting too deep (limit 512)", at: 512))
        let objects = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(parseError(objects) == JSONParseError("nesting too deep (limit 512)", at: 512 * 5))
        let mixed = String(repeating: #"[{"a":"#, count: 5_000)
        #expect(parseError(mixed)?.message == "nesting too deep (limit 512)")
        // Unterminated deep input: still the depth error first.
        #expect(parseError(String(repeating: "[", count: 100_000))?.offset == 512)
    }

    @Test func depthLimitIsExactAndConfigurable() throws {
        func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        #expect(parseError(nested(512)) == nil)
        #expect(parseError(nested(513)) == JSONParseError("nesting too deep (limit 512)", at: 512))
        #expect(parseResult(nested(3), maxDepth: 3).isSuccess)
        #expect(parseResult(nested(4), maxDepth: 3).failure == JSONParseError("nesting too deep (limit 3)", at: 3))
        #expect(parseResult("1", maxDepth: 0).isSuccess)
        #expect(parseResult("[]", maxDepth: 0).failure?.message == "nesting too deep (limit 0)")
        #expect(parseResult(#"{"a":{}}"#, maxDepth: 1).failure == JSONParseError("nesting too deep (limit 1)", at: 5))
    }

    @Test func tenThousandDeepParsesWhenAllowed() throws {
        // The parser is iterative: with the limit raised, depth costs heap, not stack.
        let depth = 10_000
        let arrays = String(repeating: "[", count: depth) + "7" + String(repeating: "]", count: depth)
        var level = 0
        var current = try JSONParser(maxDepth: depth).parse(arrays)
        // Walk (and free) the value one level at a time, so no recursive deinit runs deep.
        while case .array(let elements) = current, let first = elements.first {
            current = first
            level += 1
        }
        #expect(level == depth)
        #expect(current == 7)

        let objects = String(repeating: #"{"k":"#, count: depth) + "null" + String(repeating: "}", count: depth)
        level = 0
        current = try JSONParser(maxDepth: depth).parse(objects)
        while case .object(let members) = current, let inner = members["k"] {
            current = inner
            level += 1
        }
        #expect(level == depth)
        #expect(current == .null)
    }

    @Test func randomMutationsNeverTrap() {
        var rng = JSONTestRNG(seed: 0xF022)
        var documents: [[UInt8]] = [
            Array(#"{"a":[1,2.5e-3,{"b":null}],"c":"x\ny\u00e9😀\uD83D\uDE00","d":true,"e":false,"f":-0.5}"#.utf8),
            Array(#"[[],{},[[[]]],"",0,-1,1E+2,"한국어",123456789012345678901234567890]"#.utf8),
        ]
        for _ in 0..<30 {
            documents.append(JSONFuzz.value(depth: 0, rng: &rng).encoded())
        }
        let interesting: [UInt8] = Array("\"\\{}[],:0123456789-+.eEtfnu \n".utf8) + [0, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xF0, 0xF4, 0xFF]
        var accepted = 0
        for iteration in 0..<40_000 {
            var bytes = documents[iteration % documents.count]
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let position = bytes.isEmpty ? 0 : Int(rng.next() % UInt64(bytes.count))
                let byte = rng.next() % 2 == 0 ? interesting[Int(rng.next() % UInt64(interesting.count))] : UInt8(truncatingIfNeeded: rng.next())
                switch rng.next() % 5 {
                case 0 where !bytes.isEmpty: bytes[position] = byte
                case 1: bytes.insert(byte, at: min(position, bytes.count))
                case 2 where !bytes.isEmpty: bytes.remove(at: position)
                case 3 where !bytes.isEmpty: bytes.removeSubrange(position...)
                default:
                    let end = min(bytes.count, position + Int(rng.next() % 8))
                    bytes.insert(contentsOf: bytes[position..<end], at: position)
                }
            }
            switch parseResult(bytes: bytes) {
            case .success(let value):
                accepted += 1
                // Whatever is accepted must write and read back to the same value.
                #expect(parseResult(bytes: value.encoded()).success == value)
            case .failure(let error):
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
        #expect(accepted > 0)
    }

    @Test func parsesFoundationOutputForRandomValues() throws {
        var rng = JSONTestRNG(seed: 7)
        for _ in 0..<500 {
            let value = JSONFuzz.value(depth: 0, rng: &rng, foundationSafe: true)
            let data = try JSONSerialization.data(withJSONObject: value.fuzzFoundationObject, options: [.fragmentsAllowed])
            let parsed = try JSONParser().parse(data)
            #expect(parsed == value, "\(String(decoding: data, as: UTF8.self))")
            let pretty = try JSONSerialization.data(withJSONObject: value.fuzzFoundationObject, options: [.fragmentsAllowed, .prettyPrinted])
            #expect(try JSONParser().parse(pretty) == value)
        }
    }
}

extension Result {
    fileprivate var isSuccess: Bool { if case .success = self { return true } else { return false } }
    fileprivate var success: Success? { if case .success(let s) = self { return s } else { return nil } }
    fileprivate var failure: Failure? { if case .failure(let f) = self { return f } else { return nil } }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
