import Testing

@testable import Thumbnails
