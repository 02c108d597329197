import Foundation
import TetherBinding
import TetherJSON
import TetherState

/// The exchange calculator: `result` follows the typed `amount` at once, with no button. The
/// pair (`from` → `to`) can be switched among `currencies`; when the amount can't be read,
/// `error` says why and `result` is empty.
public final class Exchange: ViewModel {
    /// Units of each currency per US dollar (fixed demo rates).
    static let perDollar: [String: Double] = ["USD": 1, "KRW": 1350, "EUR": 0.92, "JPY": 150, "GBP": 0.79]
    static let currencies = ["USD", "KRW", "EUR", "JPY", "GBP"]

    let amount: Observable<String>
    let from: Observable<String>
    let to: Observable<String>
    let rate: Observable<Double>

    public init(context: ViewModelContext) {
        amount = context.property("amount", "")
        from = context.property("from", "USD")
        to = context.property("to", "KRW")
        rate = context.property("rate", 1350.0)
        context.publish("currencies", Observable(Self.currencies))
        let conversion = combineLatest(amount, rate).map(Exchange.convert)
        context.publish("result", conversion.map { (try? $0.get()) ?? "" }.removeDuplicates())
        context.publish("error", conversion.map { result -> String? in
            if case .failure(let problem) = result { return problem.message } else { return nil }
        }.removeDuplicates())
    }

    struct Unreadable: Error, Equatable {
        let message: String
    }

    /// amount × rate with two decimals; an empty amount gives "" and no error.
    static func convert(_ amount: String, _ rate: Double) -> Result<String, Unreadable> {
        let text = amount.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return .success("") }
        if text.contains(",") {
            return .failure(Unreadable(message: "\"\(text)\" has a comma: write \(text.replacingOccurrences(of: ",", with: "")) without separators"))
        }
        // The rule is the message's: digits and at most one decimal point, so no sign either.
        if text.hasPrefix("-"), Double(text.dropFirst()) != nil {
            return .failure(Unreadable(message: "\"\(text)\" is negative: type an amount without a sign"))
        }
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(text) else {
            return .failure(Unreadable(message: "\"\(text)\" is not a number: use digits and at most one decimal point"))
        }
        let result = value * rate
        guard value.isFinite, result.isFinite, abs(result) < 1e15 else {
            return .failure(Unreadable(message: "\"\(text)\" is too large to convert"))
        }
        return .success(String(format: "%.2f", result))
    }

    struct Pair: Decodable { var from: String; var to: String }

    public static let actions = ActionTable<Exchange>()
        .on("setAmount", ValueArgs<String>.self) { model, args in
            guard args.value.utf8.count <= 64 else { throw ActionError.invalidArgs("amount is longer than 64 characters") }
            model.amount.value = args.value
        }
        .on("setRate", ValueArgs<Double>.self) { model, args in
            guard args.value.isFinite, args.value > 0 else { throw ActionError.invalidArgs("rate must be a positive number") }
            model.rate.value = args.value
        }
        .on("setPair", Pair.self) { model, args in
            guard let from = perDollar[args.from], let to = perDollar[args.to] else {
                throw ActionError.invalidArgs("currencies are \(currencies.joined(separator: ", "))")
            }
            // A currency against itself would show "10 EUR = 20.00 EUR" after a setRate.
            guard args.from != args.to else {
                throw ActionError.invalidArgs("from and to must be two different currencies (both are \(args.from))")
            }
            model.from.value = args.from
            model.to.value = args.to
            model.rate.value = (to / from * 10_000).rounded() / 10_000
        }
}
