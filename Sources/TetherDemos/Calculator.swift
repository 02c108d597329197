import BigInt
import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// The MVP calculator: keys edit the display; `=` evaluates it exactly and adds "EXPR = RESULT"
/// to the history. A malformed expression or a division by zero shows `Error: why`.
public final class Calculator: ViewModel, CalculatorContract.Implementation {
    public static let keys = Set(CalculatorContract.keys)
    static let maximumDisplayLength = 64
    static let maximumHistory = 100
    static let errorText = "Error"

    public let display = Observable("")
    public let history = ObservableList<String>()
    /// The display shows a result: the next digit starts a new number.
    private var justEvaluated = false

    public init(context: ViewModelContext) {}

    public static let actions = ActionTable(CalculatorContract.binding(Calculator.self))

    public func press(key: String) throws {
        guard Self.keys.contains(key) else {
            throw Refusal(CalculatorContract.Failure.unknownKey, "unknown key \"\(key)\"; keys are 0-9 + - * / % . back clear =")
        }
        press(key)
    }

    func press(_ key: String) {
        // After an error, the next key starts over; after `=`, a digit starts a new number while
        // an operator continues from the result.
        var text = display.value.hasPrefix(Self.errorText) ? "" : display.value
        if justEvaluated, key.first?.isNumber == true || key == "." { text = "" }
        justEvaluated = false
        switch key {
        case "clear":
            text = ""
        case "back":
            if !text.isEmpty { text.removeLast() }
        case "=":
            guard !text.isEmpty else { return }
            switch Self.evaluate(text) {
            case .success(let result):
                history.append("\(text) = \(result)")
                if history.count > Self.maximumHistory { history.remove(at: 0) }
                text = result
                justEvaluated = true
            case .failure(let problem):
                text = "\(Self.errorText): \(problem.rawValue)"
            }
        default:
            guard text.count < Self.maximumDisplayLength else { return }
            text += key
        }
        display.value = text
    }

    enum Problem: String, Error {
        case malformed = "not a complete expression"
        case divisionByZero = "division by zero"
        case tooLong = "result too long"
    }

    /// Evaluates `+ - * / %` (`%` is the remainder, as in most programming languages) with the
    /// usual precedence, exactly: numbers are fractions of arbitrary-precision integers, so no
    /// number of digits loses precision. A result that is not a finite decimal is rounded to 10
    /// places.
    static func evaluate(_ expression: String) -> Result<String, Problem> {
        var parser = ExpressionParser(Array(expression))
        do {
            let value = try parser.parseExpression()
            guard parser.isAtEnd else { return .failure(.malformed) }
            let text = value.decimalText(places: 10)
            return text.count <= maximumDisplayLength ? .success(text) : .failure(.tooLong)
        } catch {
            return .failure(error)
        }
    }
}

/// An exact fraction `numerator / denominator` (denominator > 0, in lowest terms).
struct Fraction: Equatable {
    let numerator: BigInt
    let denominator: BigInt

    init(_ numerator: BigInt, _ denominator: BigInt = 1) {
        let divisor = numerator.greatestCommonDivisor(with: denominator)
        let sign: BigInt = denominator < 0 ? -1 : 1
        self.numerator = divisor == 0 ? 0 : sign * numerator / divisor
        self.denominator = divisor == 0 ? 1 : sign * denominator / divisor
    }

    /// "12.5" → 25/2.
    init?(decimal text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = BigInt(parts[0].isEmpty ? "0" : String(parts[0])) else { return nil }
        let fraction = parts.count == 2 ? String(parts[1]) : ""
        guard fraction.isEmpty || BigInt(fraction) != nil else { return nil }
        let scale = BigInt(10).power(fraction.count)
        self.init(whole * scale + (BigInt(fraction) ?? 0), scale)
    }

    var isZero: Bool { numerator == 0 }

    static func + (a: Fraction, b: Fraction) -> Fraction { Fraction(a.numerator * b.denominator + b.numerator * a.denominator, a.denominator * b.denominator) }
    static func - (a: Fraction, b: Fraction) -> Fraction { Fraction(a.numerator * b.denominator - b.numerator * a.denominator, a.denominator * b.denominator) }
    static func * (a: Fraction, b: Fraction) -> Fraction { Fraction(a.numerator * b.numerator, a.denominator * b.denominator) }
    static func / (a: Fraction, b: Fraction) -> Fraction { Fraction(a.numerator * b.denominator, a.denominator * b.numerator) }
    static prefix func - (a: Fraction) -> Fraction { Fraction(-a.numerator, a.denominator) }

    /// The remainder of truncating division: `a - b * trunc(a / b)`, with the sign of `a`.
    func remainder(dividingBy b: Fraction) -> Fraction {
        let quotient = self / b
        return self - b * Fraction(quotient.numerator / quotient.denominator)
    }

    /// Exact when the fraction is a finite decimal, else rounded half away from zero to `places`.
    func decimalText(places: Int) -> String {
        var denominator = self.denominator
        var exactPlaces = 0
        for factor: BigInt in [2, 5] { while denominator % factor == 0 { denominator /= factor } }
        if denominator == 1 {
            while BigInt(10).power(exactPlaces) % self.denominator != 0 { exactPlaces += 1 }
        }
        let digits = denominator == 1 ? exactPlaces : places
        let scale = BigInt(10).power(digits)
        let magnitude = numerator.magnitude * BigUInt(scale) * 2 + self.denominator.magnitude
        var scaled = BigInt(magnitude / (2 * self.denominator.magnitude))  // rounded half up
        if numerator < 0 { scaled.negate() }
        guard scaled != 0 else { return "0" }
        var text = String(scaled.magnitude).leftPadding(to: digits + 1)
        if digits > 0 {
            text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
            while text.last == "0" { text.removeLast() }
            if text.last == "." { text.removeLast() }
        }
        return (scaled < 0 ? "-" : "") + text
    }
}

private extension String {
    func leftPadding(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

/// Recursive descent over `expression := term (("+"|"-") term)*`,
/// `term := factor (("*"|"/"|"%") factor)*`, `factor := ("-"|"+") factor | number`.
private struct ExpressionParser {
    let characters: [Character]
    var position = 0
    init(_ characters: [Character]) { self.characters = characters }

    var isAtEnd: Bool { position == characters.count }
    private var next: Character? { isAtEnd ? nil : characters[position] }

    mutating func parseExpression() throws(Calculator.Problem) -> Fraction {
        var value = try parseTerm()
        while let op = next, op == "+" || op == "-" {
            position += 1
            let rhs = try parseTerm()
            value = op == "+" ? value + rhs : value - rhs
        }
        return value
    }

    mutating func parseTerm() throws(Calculator.Problem) -> Fraction {
        var value = try parseFactor()
        while let op = next, op == "*" || op == "/" || op == "%" {
            position += 1
            let rhs = try parseFactor()
            switch op {
            case "*": value = value * rhs
            case "/":
                guard !rhs.isZero else { throw .divisionByZero }
                value = value / rhs
            default:
                guard !rhs.isZero else { throw .divisionByZero }
                value = value.remainder(dividingBy: rhs)
            }
        }
        return value
    }

    mutating func parseFactor() throws(Calculator.Problem) -> Fraction {
        if let sign = next, sign == "-" || sign == "+" {
            position += 1
            let value = try parseFactor()
            return sign == "-" ? -value : value
        }
        let start = position
        while let c = next, c.isASCII, c.isNumber || c == "." { position += 1 }
        let text = String(characters[start..<position])
        guard !text.isEmpty, text != ".", let value = Fraction(decimal: text) else { throw .malformed }
        return value
    }
}
