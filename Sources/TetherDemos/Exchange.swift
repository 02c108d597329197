import Foundation
import TetherBinding
import TetherJSON
import TetherState

/// The exchange calculator: `result` follows the typed `amount` at once, with no button.
public final class Exchange: ViewModel {
    let amount: Observable<String>
    let rate: Observable<Double>

    public init(context: ViewModelContext) {
        amount = context.property("amount", "")
        rate = context.property("rate", 1350.0)
        context.publish("result", combineLatest(amount, rate).map(Exchange.convert).removeDuplicates())
    }

    /// amount × rate with two decimals; empty or unreadable text gives "" rather than an error.
    static func convert(_ amount: String, _ rate: Double) -> String {
        let text = amount.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }),
              let value = Double(text), value.isFinite
        else { return "" }
        let result = value * rate
        guard result.isFinite, abs(result) < 1e15 else { return "" }
        return String(format: "%.2f", result)
    }

    public static let actions = ActionTable<Exchange>()
        .on("setAmount", ValueArgs<String>.self) { model, args in
            guard args.value.utf8.count <= 64 else { throw ActionError.invalidArgs("amount is longer than 64 characters") }
            model.amount.value = args.value
        }
        .on("setRate", ValueArgs<Double>.self) { model, args in
            guard args.value.isFinite, args.value > 0 else { throw ActionError.invalidArgs("rate must be a positive number") }
            model.rate.value = args.value
        }
}
