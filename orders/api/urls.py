from api.routers import ApiRouter
from orders.api.shipments import ShipmentViewSet
from orders.api.views import OrderViewSet

router = ApiRouter()
router.register("orders", OrderViewSet, basename="order")
router.register("orders/<str:orderId>/shipments", ShipmentViewSet, basename="shipment")

urlpatterns = router.urls
