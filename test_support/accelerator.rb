# frozen_string_literal: true

# The one way a spec's or benchmark's child process loads an accelerator (only one can be loaded per process): pure
# Ruby, Debian's C accelerator (thrift 0.14), a newer C accelerator from THRIFT_MASTER_RB (an apache/thrift
# checkout's lib/rb whose ext/ you built), or ours; pure-master and ours-master: that checkout's Ruby library (which
# has HeaderTransport) without an accelerator or with ours. `ruby -r test_support/accelerator.rb`, then
# `Accelerator.load`.
module Accelerator
  NAMES = %w[pure c c-master ours pure-master ours-master].freeze
  LIB = File.expand_path("../lib", __dir__)

  class << self
    attr_reader :name

    # The protocol to use: BinaryProtocolAccelerated (pure Ruby: BinaryProtocol), or for "compact" the
    # CompactProtocol, whose methods each accelerator replaces in place, or for "json" the JsonProtocol (pure Ruby in
    # every thrift), or for "plain" the plain Thrift::BinaryProtocol (BinaryProtocolFactory's, the Serializer's
    # default) whatever the accelerator. The default comes from PROTOCOL.
    def protocol_class(protocol = ENV.fetch("PROTOCOL", "binary"))
      case protocol
      when "compact" then Thrift::CompactProtocol
      when "json" then Thrift::JsonProtocol
      when "binary" then name.start_with?("pure") ? Thrift::BinaryProtocol : Thrift::BinaryProtocolAccelerated
      when "plain" then Thrift::BinaryProtocol
      else abort "unknown protocol #{protocol.inspect}: binary, plain, compact or json"
      end
    end

    def load(name)
      @name = name
      case name
      when "pure"
        $LOADED_FEATURES << "thrift_native.so" # keeps thrift.rb from loading any accelerator
        require "thrift"
      when "c"
        require "thrift"
        abort "the C accelerator did not load" unless defined?(Thrift::BinaryProtocolAccelerated) && !defined?(ThriftNative)
      when "c-master"
        dir = ENV.fetch("THRIFT_MASTER_RB")
        $LOAD_PATH.unshift File.join(dir, "lib"), File.join(dir, "ext")
        require "thrift"
        abort "the master C accelerator did not load" unless $LOADED_FEATURES.include?(File.join(dir, "ext", "thrift_native.so"))
      when "ours"
        $LOAD_PATH.unshift LIB
        require "thrift_native"
        abort "thrift_native is not active" unless ThriftNative.active?
      when "pure-master", "ours-master"
        # thrift master's Ruby library (HeaderTransport, HeaderProtocol), pure or with thrift_native.
        $LOAD_PATH.unshift File.join(ENV.fetch("THRIFT_MASTER_RB"), "lib")
        if name == "pure-master"
          $LOADED_FEATURES << "thrift_native.so"
          require "thrift"
        else
          $LOAD_PATH.unshift LIB
          require "thrift_native"
          abort "thrift_native is not active" unless ThriftNative.active?
        end
      else
        abort "unknown accelerator #{name.inspect}: #{NAMES.join(", ")}"
      end
    end

    # Whether the loaded thrift's pure-Ruby structs can be written on this Ruby: before thrift 0.20 or so,
    # BaseProtocol#write_type tests `is_a? Fixnum`, a constant Ruby 3.2 removed (a NameError for every struct).
    def pure_structs_work?
      Thrift::BaseProtocol.new(nil).write_type({ type: Thrift::Types::I32 }, 1)
      true
    rescue NameError => e
      e.name != :Fixnum
    rescue NotImplementedError, StandardError
      true
    end

    # For a benchmark's child: with pure Ruby whose structs cannot run on this Ruby, nothing to measure (the table
    # shows n/a); says so on stderr and exits.
    def exit_unless_structs_run
      return unless name.start_with?("pure") && !pure_structs_work?

      warn "#{name}: this thrift's pure-Ruby structs do not run on Ruby #{RUBY_VERSION} (Fixnum): not measured"
      exit
    end
  end
end
