import Foundation
import RDLab

exit(RDLab.main(arguments: Array(CommandLine.arguments.dropFirst())))
