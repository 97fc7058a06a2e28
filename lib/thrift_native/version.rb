# frozen_string_literal: true

module ThriftNative
  VERSION = "0.1.0"
end
