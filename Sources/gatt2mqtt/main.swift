print("gatt2mqtt")
