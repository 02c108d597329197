import ArgumentParser
import TetherClient

/// One request of the daemon's administration over HTTP (`tether webhooks`, `history`, `show`):
/// the answer when it is a success, else the failure to exit with.
enum AdminCommand {
    static func ask(_ connection: ConnectionOptions, _ what: String, success: Int = 200,
                    _ request: (RoomAdministration) async throws -> RoomAdministration.Answer) async throws -> RoomAdministration.Answer {
        let options = try connection.clientOptions(reconnect: false)
        let answer: RoomAdministration.Answer
        do {
            answer = try await request(RoomAdministration(options: options, timeout: connection.timeoutDuration))
        } catch {
            throw Output.failure("cannot reach \(options.urls[0]): \(Output.describe(error))")
        }
        guard answer.status == success else {
            let reason = AuthAdvice.roomAdministration(status: answer.status, serverReason: answer.errorMessage, hadToken: options.token != nil)
            throw Output.failure("cannot \(what): \(reason)", code: Output.serverError)
        }
        return answer
    }
}
