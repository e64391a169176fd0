"""The process: settings, command router, rendering and the chat transports."""
