import Foundation
import TetherBinding
import TetherJSON
import TetherState

/// The MVP calculator: keys edit the display; `=` evaluates it with decimal arithmetic and adds
/// "EXPR = RESULT" to the history. A malformed expression or a division by zero shows `Error`.
public final class Calculator: ViewModel {
    public static let keys: Set<String> = Set((0...9).map(String.init) + ["+", "-", "*", "/", "%", ".", "back", "clear", "="])
    static let maximumDisplayLength = 64
    static let maximumHistory = 100
    static let errorText = "Error"

    let display: Observable<String>
    let history: ObservableList<String>

    public init(context: ViewModelContext) {
        display = context.property("display", "")
        history = context.list("history", [String]())
    }

    struct Key: Decodable { var key: String }

    public static let actions = ActionTable<Calculator>()
        .on("press", Key.self) { model, args in
            guard keys.contains(args.key) else {
                throw ActionError.invalidArgs("unknown key \"\(args.key)\"; keys are 0-9 + - * / % . back clear =")
            }
            model.press(args.key)
        }

    func press(_ key: String) {
        // After an error, the next key starts over.
        var text = display.value == Self.errorText ? "" : display.value
        switch key {
        case "clear":
            text = ""
        case "back":
            if !text.isEmpty { text.removeLast() }
        case "=":
            guard !text.isEmpty else { return }
            if let result = Self.evaluate(text) {
                history.append("\(text) = \(result)")
                if history.count > Self.maximumHistory { history.remove(at: 0) }
                text = result
            } else {
                text = Self.errorText
            }
        default:
            guard text.count < Self.maximumDisplayLength else { return }
            text += key
        }
        display.value = text
    }

    /// Evaluates `+ - * / %` over decimals with the usual precedence; nil when the expression is
    /// malformed, divides by zero or overflows.
    static func evaluate(_ expression: String) -> String? {
        var parser = ExpressionParser(Array(expression))
        guard let value = parser.parseExpression(), parser.isAtEnd, !value.isNaN else { return nil }
        var rounded = Decimal()
        var exact = value
        NSDecimalRound(&rounded, &exact, 10, .plain)
        return rounded.isZero ? "0" : "\(rounded)"
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

    mutating func parseExpression() -> Decimal? {
        guard var value = parseTerm() else { return nil }
        while let op = next, op == "+" || op == "-" {
            position += 1
            guard let rhs = parseTerm() else { return nil }
            value = op == "+" ? value + rhs : value - rhs
            if value.isNaN { return nil }
        }
        return value
    }

    mutating func parseTerm() -> Decimal? {
        guard var value = parseFactor() else { return nil }
        while let op = next, op == "*" || op == "/" || op == "%" {
            position += 1
            guard let rhs = parseFactor() else { return nil }
            switch op {
            case "*": value = value * rhs
            case "/":
                guard !rhs.isZero else { return nil }
                value = value / rhs
            default:
                guard !rhs.isZero else { return nil }
                var quotient = value / rhs, truncated = Decimal()
                NSDecimalRound(&truncated, &quotient, 0, .down)
                value = value - rhs * truncated
            }
            if value.isNaN { return nil }
        }
        return value
    }

    mutating func parseFactor() -> Decimal? {
        if let sign = next, sign == "-" || sign == "+" {
            position += 1
            guard let value = parseFactor() else { return nil }
            return sign == "-" ? -value : value
        }
        let start = position
        var dots = 0
        while let c = next, c.isASCII, c.isNumber || c == "." {
            if c == "." { dots += 1 }
            position += 1
        }
        let text = String(characters[start..<position])
        guard !text.isEmpty, dots <= 1, text != "." else { return nil }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }
}
