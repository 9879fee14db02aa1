/// The page (`GET /`): placeholder until the page below is written.
enum WebPage {
  static let html = "<!doctype html><title>gatt2mqtt</title>"
}
